package interop_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// mtlsFiles are the PEM files of a mutual-TLS ingress: its server
// certificate for 127.0.0.1, and the CA of the client certificates.
type mtlsFiles struct {
	serverCert, serverKey, clientCA string
	serverPool                      *x509.CertPool
	alice, mallory                  tls.Certificate
}

func writePEMFile(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func newMTLSFiles(t *testing.T) *mtlsFiles {
	t.Helper()
	dir := t.TempDir()
	f := &mtlsFiles{}
	mk := func(tmpl, parent *x509.Certificate, signer *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if parent == nil {
			parent, signer = tmpl, key
		}
		tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		return c, key, der
	}
	srv, srvKey, srvDER := mk(&x509.Certificate{Subject: pkix.Name{CommonName: "127.0.0.1"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, nil, nil)
	f.serverPool = x509.NewCertPool()
	f.serverPool.AddCert(srv)
	f.serverCert = writePEMFile(t, dir, "tls.pem", "CERTIFICATE", srvDER)
	kb, _ := x509.MarshalPKCS8PrivateKey(srvKey)
	f.serverKey = writePEMFile(t, dir, "tls.key", "PRIVATE KEY", kb)
	ca, caKey, caDER := mk(&x509.Certificate{Subject: pkix.Name{CommonName: "client CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}, nil, nil)
	f.clientCA = writePEMFile(t, dir, "client-ca.pem", "CERTIFICATE", caDER)
	client := func(cn string) tls.Certificate {
		c, key, der := mk(&x509.Certificate{Subject: pkix.Name{CommonName: cn}, KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, ca, caKey)
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: c}
	}
	f.alice, f.mallory = client("alice"), client("mallory")
	return f
}

// TestIngressCertBoundToken_RFC8705_3: nginx (ssl_verify_client optional,
// $ssl_client_escaped_cert) and Caddy (client_auth verify_if_given,
// certificate_der_base64), each from the shipped file with TLS turned on,
// in front of an app, with idp-proxy (forward-auth only, the shipped
// configuration) for verdicts: a certificate-bound token passes with the
// certificate it names and is refused with another, without one, and with
// a client that forges the ingress's header; the header never reaches the
// app. The provider is idptest's.
func TestIngressCertBoundToken_RFC8705_3(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	nginxBin := ingressBin(t, "nginx")
	caddyBin := ingressBin(t, "caddy")
	_, proxyBin := binaries(t)
	idpSrv := idptest.NewServer(t)
	files := newMTLSFiles(t)
	token := idpSrv.MintCertBound(idpSrv.UserClaims("shortener", "alice", "creator"), files.alice.Leaf)

	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Ssl-Client-Cert") != "" || r.Header.Get("X-Forwarded-Tls-Client-Cert") != "" {
			http.Error(w, "the client certificate header reached the app", http.StatusTeapot)
			return
		}
		_, _ = io.WriteString(w, "app:"+r.Header.Get("X-Auth-Request-User"))
	}))
	t.Cleanup(app.Close)
	port := func() string { return "127.0.0.1:" + strconv.Itoa(freePort(t)) }
	startAuth := func(ports ingressPorts, header, format string) {
		cfg := ports.rewrite(shipped(t, "idp-proxy-forward-auth.yaml"))
		cfg = strings.NewReplacer(
			"server_url: http://keycloak:8080", "server_url: "+idpSrv.URL,
			"realm: demo", "realm: "+idpSrv.Realm,
			"metrics_listen: 127.0.0.1:9180", "metrics_listen: \"\"",
			// Not the shipped relative path: the test must not write into the tree.
			"key_file: assertion-keys.pem", "key_file: "+filepath.Join(t.TempDir(), "assertion-keys.pem"),
			"header: ssl-client-cert\n  format: pem", "header: "+header+"\n  format: "+format,
		).Replace(cfg)
		path := filepath.Join(t.TempDir(), "idp-proxy.yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(proxyBin, "serve", "--config", path)
		cmd.Env = append(cleanEnv(), "IDP_PROXY_IDP_CLIENT_SECRET=secret",
			"IDP_PROXY_IDP_SESSION_SECRET=interop-session-secret-0123456789abcdef")
		waitVerdict(t, startProc(t, "idp-proxy ("+header+")", cmd), "http://"+ports.verify+"/auth/verify")
	}
	appAddr := strings.TrimPrefix(app.URL, "http://")
	nginxPorts := ingressPorts{front: port(), login: port(), verify: port(), app: appAddr}
	caddyPorts := ingressPorts{front: port(), login: port(), verify: port(), app: appAddr}
	startAuth(nginxPorts, "ssl-client-cert", "pem")
	startAuth(caddyPorts, "X-Forwarded-Tls-Client-Cert", "der")

	// nginx, from the shipped file, with the TLS lines it documents.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := nginxPorts.rewrite(shipped(t, "nginx.conf"))
	listen := "listen " + nginxPorts.front + ";"
	if !strings.Contains(conf, listen) {
		t.Fatalf("nginx.conf has no %q", listen)
	}
	conf = strings.Replace(conf, listen, "listen "+nginxPorts.front+" ssl;\n    ssl_certificate "+files.serverCert+
		";\n    ssl_certificate_key "+files.serverKey+";\n    ssl_client_certificate "+files.clientCA+";\n    ssl_verify_client optional;", 1)
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	global := "daemon off;"
	if os.Geteuid() == 0 {
		global += " user root;"
	}
	ng := startProc(t, "nginx", exec.Command(nginxBin, "-p", dir, "-c", confPath, "-g", global))

	// Caddy, from the shipped file, serving TLS with client certificates.
	site := "http://" + caddyPorts.front + " {"
	caddyConf := caddyPorts.rewrite(shipped(t, "Caddyfile"))
	if !strings.Contains(caddyConf, site) {
		t.Fatalf("Caddyfile has no %q", site)
	}
	// A name, not an address: with client authentication Caddy requires
	// the Host to be the TLS server name (strict_sni_host), and clients
	// send no server name for an address.
	caddyFront := strings.Replace(caddyPorts.front, "127.0.0.1", "localhost", 1)
	caddyConf = strings.Replace(caddyConf, site, "https://"+caddyFront+" {\n\ttls "+files.serverCert+" "+files.serverKey+
		" {\n\t\tclient_auth {\n\t\t\tmode verify_if_given\n\t\t\ttrusted_ca_cert_file "+files.clientCA+"\n\t\t}\n\t}", 1)
	caddyfile := filepath.Join(t.TempDir(), "Caddyfile")
	if err := os.WriteFile(caddyfile, []byte(caddyConf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(caddyBin, "run", "--config", caddyfile, "--adapter", "caddyfile")
	home := t.TempDir()
	cmd.Env = append(cleanEnv(), "HOME="+home, "XDG_DATA_HOME="+home, "XDG_CONFIG_HOME="+home)
	cd := startProc(t, "caddy", cmd)

	client := func(cert *tls.Certificate) *http.Client {
		tc := &tls.Config{RootCAs: files.serverPool}
		if cert != nil {
			tc.Certificates = []tls.Certificate{*cert}
		}
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	}
	post := func(front string, cert *tls.Certificate, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest("POST", "https://"+front+"/shorten", strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+token)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := client(cert).Do(req)
		if err != nil {
			t.Fatalf("POST https://%s/shorten: %v", front, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, ing := range []struct {
		name   string
		p      *proc
		front  string
		header string
		forged string
	}{
		{"nginx", ng, nginxPorts.front, "ssl-client-cert", pemEscaped(files.alice.Leaf)},
		{"caddy", cd, caddyFront, "X-Forwarded-Tls-Client-Cert", derBase64(files.alice.Leaf)},
	} {
		t.Run(ing.name, func(t *testing.T) {
			waitTLS(t, ing.p, client(nil), "https://"+ing.front+"/health")
			if st, body := post(ing.front, &files.alice, nil); st != http.StatusOK || !strings.HasPrefix(body, "app:") {
				t.Fatalf("the token's certificate: %d %s, want the app's 200", st, body)
			}
			if st, body := post(ing.front, &files.mallory, nil); st != http.StatusUnauthorized {
				t.Fatalf("another certificate: %d %s, want 401", st, body)
			}
			if st, body := post(ing.front, nil, nil); st != http.StatusUnauthorized {
				t.Fatalf("no certificate: %d %s, want 401", st, body)
			}
			if st, body := post(ing.front, nil, map[string]string{ing.header: ing.forged}); st != http.StatusUnauthorized {
				t.Fatalf("a forged %s header: %d %s, want 401", ing.header, st, body)
			}
		})
	}
}

func pemEscaped(c *x509.Certificate) string {
	return strings.NewReplacer("\n", "%0A", " ", "%20", "+", "%2B", "/", "%2F", "=", "%3D").Replace(
		string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})))
}

func derBase64(c *x509.Certificate) string {
	return strings.TrimSpace(strings.NewReplacer("-----BEGIN CERTIFICATE-----", "", "-----END CERTIFICATE-----", "", "\n", "").Replace(
		string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}))))
}

// waitTLS polls url with c until it answers 200.
func waitTLS(t *testing.T, p *proc, c *http.Client, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last := "no answer"
	for time.Now().Before(deadline) {
		if p.exited() {
			t.Fatalf("%s exited:\n%s", p.name, tail(p.stdout.String()+p.stderr.String(), 4000))
		}
		resp, err := c.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = resp.Status + " " + string(b)
		} else {
			last = err.Error()
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: %s never answered 200: %s", p.name, url, last)
}
