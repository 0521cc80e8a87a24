package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/acme"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// clientPKI is a client CA (written as a PEM file) and certificates it
// issued.
type clientPKI struct {
	caFile string
	ca     *x509.Certificate
	key    *ecdsa.PrivateKey
}

func newClientPKI(t *testing.T) *clientPKI {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "client CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	p := filepath.Join(t.TempDir(), "client-ca.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &clientPKI{caFile: p, ca: ca, key: key}
}

func (c *clientPKI) issue(t *testing.T, cn string) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.ca, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// The serve command's listener with tls.client_auth: require refuses a
// handshake without a client certificate; with the CA's certificate a
// certificate-bound token (RFC 8705 §3) passes with the certificate it
// names and is refused with another; request serves clients without one.
func TestServeClientAuth_RFC8705_3(t *testing.T) {
	idpSrv := idptest.NewServer(t)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	t.Cleanup(upstream.Close)
	certFile, keyFile, pool := selfSigned(t)
	pki := newClientPKI(t)
	alice, mallory := pki.issue(t, "alice"), pki.issue(t, "mallory")
	token := idpSrv.MintCertBound(idpSrv.UserClaims("shortener", "alice", "creator"), alice.Leaf)
	client := func(cert *tls.Certificate) *http.Client {
		tc := &tls.Config{RootCAs: pool}
		if cert != nil {
			tc.Certificates = []tls.Certificate{*cert}
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	}
	post := func(addr string, cert *tls.Certificate) (int, error) {
		req, _ := http.NewRequest("POST", "https://"+addr+"/shorten", strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client(cert).Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}

	cfg := writeConfig(t, idpSrv, upstream.URL, fmt.Sprintf("tls: {cert_file: %q, key_file: %q, client_auth: require, client_ca_file: %q}\n", certFile, keyFile, pki.caFile))
	addr, _, _, _ := startServe(t, nil, "-c", cfg, "--metrics-listen", "off")
	if resp, err := client(nil).Get("https://" + addr + "/health"); err == nil {
		resp.Body.Close()
		t.Fatalf("client_auth require: a client without a certificate got %d", resp.StatusCode)
	}
	if code, err := post(addr, &alice); err != nil || code != http.StatusOK {
		t.Fatalf("the token's certificate: %d %v, want 200", code, err)
	}
	if code, err := post(addr, &mallory); err != nil || code != http.StatusUnauthorized {
		t.Fatalf("another certificate: %d %v, want 401", code, err)
	}

	cfg = writeConfig(t, idpSrv, upstream.URL, fmt.Sprintf("tls: {cert_file: %q, key_file: %q, client_auth: request, client_ca_file: %q}\n", certFile, keyFile, pki.caFile))
	addr, _, _, _ = startServe(t, nil, "-c", cfg, "--metrics-listen", "off")
	resp, err := client(nil).Get("https://" + addr + "/health")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("client_auth request, no certificate, public route: %v %v", resp, err)
	}
	resp.Body.Close()
	if code, err := post(addr, nil); err != nil || code != http.StatusUnauthorized {
		t.Fatalf("client_auth request, bound token without its certificate: %d %v, want 401", code, err)
	}
	if code, err := post(addr, &alice); err != nil || code != http.StatusOK {
		t.Fatalf("client_auth request, the token's certificate: %d %v, want 200", code, err)
	}
}

// With ACME, the CA's TLS-ALPN-01 validation handshakes (ALPN
// acme-tls/1, no client certificate) get the ACME configuration without
// client authentication; every other handshake asks for a certificate.
func TestClientAuthKeepsACMEValidation(t *testing.T) {
	base := &tls.Config{NextProtos: []string{"h2", "http/1.1", acme.ALPNProto}, MinVersion: tls.VersionTLS12}
	pool := x509.NewCertPool()
	tc := withClientAuth(base, tls.RequireAndVerifyClientCert, pool)
	if tc.ClientAuth != tls.RequireAndVerifyClientCert || tc.ClientCAs != pool || base.ClientAuth != tls.NoClientCert {
		t.Fatalf("client auth not set on a copy: %v %v", tc.ClientAuth, base.ClientAuth)
	}
	acmeConf, err := tc.GetConfigForClient(&tls.ClientHelloInfo{SupportedProtos: []string{acme.ALPNProto}})
	if err != nil || acmeConf == nil || acmeConf.ClientAuth != tls.NoClientCert {
		t.Fatalf("acme-tls/1 handshake: %+v, %v", acmeConf, err)
	}
	if c, err := tc.GetConfigForClient(&tls.ClientHelloInfo{SupportedProtos: []string{"h2"}}); c != nil || err != nil {
		t.Fatalf("h2 handshake got another configuration: %v %v", c, err)
	}
	if withClientAuth(base, tls.NoClientCert, nil) != base {
		t.Fatal("client_auth none changed the configuration")
	}
	if c := withClientAuth(nil, tls.VerifyClientCertIfGiven, pool); c.ClientAuth != tls.VerifyClientCertIfGiven || c.GetConfigForClient != nil {
		t.Fatalf("certificate files: %+v", c)
	}
}
