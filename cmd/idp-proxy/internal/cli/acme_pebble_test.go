package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// pebbleModule is the local ACME server the certificate tests run
// against: Let's Encrypt's Pebble, built from the Go module proxy with
// `go install pkg@version`, never a dependency of this module.
const pebbleModule = "github.com/letsencrypt/pebble/v2/cmd/pebble@v2.10.3"

// pebbleBuild builds Pebble once per test binary, into a directory of its
// own under the system's temporary directory.
var pebbleBuild struct {
	once sync.Once
	path string
	err  error
}

// pebbleBinary returns the built Pebble; when it cannot be built (no
// module proxy, no Go toolchain), the test fails in CI (CI=true) and is
// skipped elsewhere.
func pebbleBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no subprocesses (Pebble, the local ACME server)")
	}
	pebbleBuild.once.Do(func() {
		// Kept in the user's cache directory, by version: built once per
		// machine, not once per run (go install itself only relinks when
		// its build cache is warm, ~1 s).
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir := filepath.Join(cache, "idp-proxy-tests", strings.ReplaceAll(pebbleModule, "/", "_"))
		if _, err := os.Stat(filepath.Join(dir, "pebble")); err == nil {
			pebbleBuild.path = filepath.Join(dir, "pebble")
			return
		}
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			pebbleBuild.err = err
			return
		}
		tmp, err := os.MkdirTemp(filepath.Dir(dir), "build-")
		if err != nil {
			pebbleBuild.err = err
			return
		}
		defer os.RemoveAll(tmp)
		start := time.Now()
		cmd := exec.Command("go", "install", pebbleModule)
		cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOWORK=off", "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			pebbleBuild.err = fmt.Errorf("go install %s: %w\n%s", pebbleModule, err, out)
			return
		}
		if err := os.Rename(tmp, dir); err != nil {
			// Another test binary built it meanwhile: use that one.
			if _, serr := os.Stat(filepath.Join(dir, "pebble")); serr != nil {
				pebbleBuild.err = err
				return
			}
		}
		pebbleBuild.path = filepath.Join(dir, "pebble")
		t.Logf("built %s in %s", pebbleModule, time.Since(start).Round(time.Millisecond))
	})
	if pebbleBuild.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Pebble (the local ACME server) cannot be built: %v", pebbleBuild.err)
		}
		t.Skipf("Pebble (the local ACME server) cannot be built, ACME tests skipped: %v", pebbleBuild.err)
	}
	return pebbleBuild.path
}

// pebbleOptions configure startPebble.
type pebbleOptions struct {
	// TLSPort and HTTPPort are where Pebble validates TLS-ALPN-01 and
	// HTTP-01 challenges, on 127.0.0.1 (its DNS answers every name so).
	TLSPort, HTTPPort int
	// Validity is the lifetime of the certificates it issues. [90 days]
	Validity time.Duration
}

// pebble is a running Pebble.
type pebble struct {
	directory string         // the ACME directory URL
	caFile    string         // PEM root of its HTTPS listener (tls.acme.directory_ca_file)
	roots     *x509.CertPool // the root of the certificates it issues
	logs      *syncBuffer
}

var pebbleOrders = regexp.MustCompile(`There are now (\d+) orders in the db`)

// orders is the number of certificate orders Pebble received.
func (p *pebble) orders() int {
	n := 0
	for _, m := range pebbleOrders.FindAllStringSubmatch(p.logs.String(), -1) {
		n, _ = strconv.Atoi(m[1])
	}
	return n
}

// startPebble runs Pebble on loopback with a DNS server that answers
// 127.0.0.1 for every name, and stops it at the end of t.
func startPebble(t *testing.T, o pebbleOptions) *pebble {
	t.Helper()
	bin := pebbleBinary(t)
	dir := t.TempDir()
	caFile, certFile, keyFile := writeLoopbackCert(t, dir)
	if o.Validity == 0 {
		o.Validity = 90 * 24 * time.Hour
	}
	listen, mgmt := freeAddr(t), freeAddr(t)
	var cfg struct {
		Pebble map[string]any `json:"pebble"`
	}
	cfg.Pebble = map[string]any{
		"listenAddress":           listen,
		"managementListenAddress": mgmt,
		"certificate":             certFile,
		"privateKey":              keyFile,
		"httpPort":                o.HTTPPort,
		"tlsPort":                 o.TLSPort,
		"ocspResponderURL":        "",
		"keyAlgorithm":            "ecdsa",
		"retryAfter":              map[string]int{"authz": 1, "order": 1},
		"profiles": map[string]any{"default": map[string]any{
			"description": "the test's", "validityPeriod": int(o.Validity / time.Second),
		}},
	}
	b, _ := json.Marshal(cfg)
	cfgFile := filepath.Join(dir, "pebble.json")
	if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	p := &pebble{directory: "https://" + listen + "/dir", caFile: caFile, logs: &syncBuffer{}}
	cmd := exec.Command(bin, "-config", cfgFile, "-dnsserver", startLoopbackDNS(t))
	cmd.Env = append(os.Environ(),
		"PEBBLE_VA_NOSLEEP=1",      // validate at once
		"PEBBLE_WFE_NONCEREJECT=0", // no random badNonce answers
		"PEBBLE_AUTHZREUSE=0",      // every order proves control again
	)
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("pebble:\n%s", p.logs.String())
		}
	})
	pemCA, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	trust := x509.NewCertPool()
	trust.AppendCertsFromPEM(pemCA)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: trust}}}
	var root []byte
	waitFor(t, "pebble's start", func() bool {
		select {
		case <-exited:
			t.Fatalf("pebble exited:\n%s", p.logs.String())
		default:
		}
		resp, err := client.Get("https://" + mgmt + "/roots/0")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		root, _ = io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK
	})
	p.roots = x509.NewCertPool()
	if !p.roots.AppendCertsFromPEM(root) {
		t.Fatalf("pebble's root: %q", root)
	}
	return p
}

// freeAddr returns a loopback address whose port was free a moment ago,
// for the servers that must know each other's ports before they start.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// writeLoopbackCert writes a CA and, signed by it, a certificate for
// 127.0.0.1 and localhost with its key (Pebble's HTTPS listener).
func writeLoopbackCert(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "idp-proxy test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	write := func(name, typ string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("cert.pem", "CERTIFICATE", der), write("key.pem", "EC PRIVATE KEY", keyDER)
}

// startLoopbackDNS serves DNS on loopback, over TCP (Pebble's client
// asks so) and UDP on the same port, answering every A question with
// 127.0.0.1 and every other one with no record, and returns its address.
func startLoopbackDNS(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	pc, err := net.ListenPacket("udp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue
			}
			if reply, ok := dnsAnswer(buf[:n]); ok {
				_, _ = pc.WriteTo(reply, from)
			}
		}
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveDNSConn(c)
		}
	}()
	return ln.Addr().String()
}

// serveDNSConn answers the length-prefixed DNS messages of one TCP
// connection (RFC 1035 §4.2.2).
func serveDNSConn(c net.Conn) {
	defer c.Close()
	for {
		var n [2]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		q := make([]byte, int(n[0])<<8|int(n[1]))
		if _, err := io.ReadFull(c, q); err != nil {
			return
		}
		reply, ok := dnsAnswer(q)
		if !ok {
			return
		}
		if _, err := c.Write(append([]byte{byte(len(reply) >> 8), byte(len(reply))}, reply...)); err != nil {
			return
		}
	}
}

func dnsAnswer(query []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, false
	}
	qs, err := p.AllQuestions()
	if err != nil {
		return nil, false
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired})
	b.EnableCompression()
	_ = b.StartQuestions()
	for _, q := range qs {
		_ = b.Question(q)
	}
	_ = b.StartAnswers()
	for _, q := range qs {
		if q.Type == dnsmessage.TypeA {
			_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: [4]byte{127, 0, 0, 1}})
		}
	}
	out, err := b.Finish()
	return out, err == nil
}
