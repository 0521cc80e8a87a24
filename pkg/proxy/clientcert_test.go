package proxy

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t testing.TB, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return &testCA{cert: c, key: key, pool: pool}
}

// client issues a client certificate with the given subject and SANs.
func (ca *testCA) client(t testing.TB, subject pkix.Name, dns []string, uris []string, emails []string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		DNSNames: dns, EmailAddresses: emails}
	for _, u := range uris {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, pu)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// startTLSProxy serves p over TLS on loopback, asking clients for a
// certificate verified by ca when given (VerifyClientCertIfGiven: what
// tls.client_auth request sets).
func startTLSProxy(t *testing.T, p *Proxy, ca *testCA, mode tls.ClientAuthType) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(p)
	srv.TLS = &tls.Config{ClientAuth: mode, ClientCAs: ca.pool}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are the point of some tests
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// tlsClient is a client of srv presenting cert (none when nil).
func tlsClient(srv *httptest.Server, cert *tls.Certificate) *http.Client {
	tr := srv.Client().Transport.(*http.Transport).Clone()
	if cert != nil {
		tr.TLSClientConfig.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func send(t *testing.T, c *http.Client, method, url, token string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"url":"https://example.com/"}`)
	}
	req, _ := http.NewRequest(method, url, body)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// certBoundSetup is a proxy over TLS with client certificates of ca
// asked for, the provider, the upstream, and two client certificates of
// ca, alice's (the token's) and mallory's.
type certBoundSetup struct {
	idp            *idptest.Server
	up             *recordingUpstream
	srv            *httptest.Server
	ca             *testCA
	alice, mallory tls.Certificate
	token          string // bound to alice's certificate, role creator
	bearer         string // an unbound token, role creator
	accessLog      *bytes.Buffer
	proxy          *Proxy
	plainProxyURL  string // the same proxy on plain HTTP (ingress mode)
}

func newCertBoundSetup(t *testing.T, edit func(*testSetup)) *certBoundSetup {
	t.Helper()
	s := &certBoundSetup{idp: newProvider(t), up: newUpstream(t), ca: newTestCA(t, "clients"), accessLog: &bytes.Buffer{}}
	s.alice = s.ca.client(t, pkix.Name{CommonName: "alice"}, nil, nil, nil)
	s.mallory = s.ca.client(t, pkix.Name{CommonName: "mallory"}, nil, nil, nil)
	claims := s.idp.UserClaims("shortener", "alice", "creator")
	s.token = s.idp.MintCertBound(claims, s.alice.Leaf)
	s.bearer = s.idp.Mint(claims)
	cfg := testConfig(s.idp, s.up.URL)
	if edit != nil {
		edit(&cfg)
	}
	p, err := newProxy(t, cfg, Options{AccessLog: slog.New(slog.NewJSONHandler(s.accessLog, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Plugin().WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	s.proxy = p
	s.srv = startTLSProxy(t, p, s.ca, tls.VerifyClientCertIfGiven)
	plain := httptest.NewServer(p)
	t.Cleanup(plain.Close)
	s.plainProxyURL = plain.URL
	return s
}

// A certificate-bound token (cnf["x5t#S256"], RFC 8705 §3) passes with
// the client certificate of the TLS connection whose SHA-256 thumbprint
// it names, and reaches the upstream.
func TestCertBoundToken_RFC8705_3_MatchingCertificatePasses(t *testing.T) {
	s := newCertBoundSetup(t, nil)
	resp, body := send(t, tlsClient(s.srv, &s.alice), "POST", s.srv.URL+"/shorten", s.token, nil)
	if resp.StatusCode != http.StatusOK || body != "ok" {
		t.Fatalf("%d %s, want 200 from the upstream", resp.StatusCode, body)
	}
	if got := s.up.last(t).Header.Get("X-Auth-Request-User"); got == "" {
		t.Fatal("no identity forwarded")
	}
	// A bearer token over the same mutual-TLS connection is unaffected.
	if resp, body := send(t, tlsClient(s.srv, &s.alice), "POST", s.srv.URL+"/shorten", s.bearer, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("bearer token: %d %s", resp.StatusCode, body)
	}
}

// RFC 8705 §3.1: the thumbprint of another client certificate (of the
// same trusted CA) does not match: 401 invalid_token, nothing forwarded.
func TestCertBoundToken_RFC8705_3_1_MismatchRefused(t *testing.T) {
	s := newCertBoundSetup(t, nil)
	before := s.up.count()
	resp, body := send(t, tlsClient(s.srv, &s.mallory), "POST", s.srv.URL+"/shorten", s.token, nil)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) ||
		!strings.Contains(body, "not the one it is bound to") {
		t.Fatalf("%d %q %s, want 401 invalid_token naming the mismatch", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
	}
	if s.up.count() != before {
		t.Fatal("a token bound to another certificate reached the upstream")
	}
}

// RFC 8705 §3: without a client certificate (TLS without one, or plain
// HTTP) a certificate-bound token is refused.
func TestCertBoundToken_RFC8705_3_NoCertificateRefused(t *testing.T) {
	s := newCertBoundSetup(t, nil)
	for name, url := range map[string]string{"TLS without a certificate": s.srv.URL, "plain HTTP": s.plainProxyURL} {
		c := tlsClient(s.srv, nil)
		resp, body := send(t, c, "POST", url+"/shorten", s.token, nil)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "without a client certificate") {
			t.Fatalf("%s: %d %s, want 401 without a client certificate", name, resp.StatusCode, body)
		}
	}
}

// pemHeader, xfccHeader and derHeader carry cert as nginx, Envoy and
// Traefik pass it.
func pemHeader(c *x509.Certificate) string {
	return url.PathEscape(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})))
}

func xfccHeader(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	return `By=spiffe://example.org/ingress;Hash=` + hex.EncodeToString(sum[:]) + `;Cert="` + pemHeader(c) + `";Subject="CN=x"`
}

func derHeader(c *x509.Certificate) string { return base64.StdEncoding.EncodeToString(c.Raw) }

// RFC 8705 §6.5 (TLS terminated before the resource server): the
// certificate an ingress passes in the configured header binds the token
// only when the ingress is a trusted peer; from any other peer the header
// is stripped unread: the token is refused, and the upstream never sees
// the header.
func TestCertBoundToken_RFC8705_6_5_UntrustedHeaderRefusedAndStripped(t *testing.T) {
	s := newCertBoundSetup(t, func(c *testSetup) {
		c.ClientCert = ClientCertConfig{Header: "ssl-client-cert", Format: "pem", TrustedCIDRs: []string{"192.0.2.0/24"}}
	})
	hdr := map[string]string{"Ssl-Client-Cert": pemHeader(s.alice.Leaf)}
	resp, body := send(t, http.DefaultClient, "POST", s.plainProxyURL+"/shorten", s.token, hdr)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "without a client certificate") {
		t.Fatalf("untrusted header: %d %s, want 401", resp.StatusCode, body)
	}
	resp, _ = send(t, http.DefaultClient, "GET", s.plainProxyURL+"/abc1234", "", hdr) // a public route
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("public route: %d", resp.StatusCode)
	}
	if v, ok := s.up.last(t).Header["Ssl-Client-Cert"]; ok {
		t.Fatalf("the untrusted client certificate header reached the upstream: %q", v)
	}
	// Another spelling, which CGI, WSGI and PHP upstreams read as the same.
	resp, _ = do(t, "GET", s.plainProxyURL+"/abc1234", "", map[string]string{"ssl_client_cert": pemHeader(s.alice.Leaf)}, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("public route: %d", resp.StatusCode)
	}
	for k := range s.up.last(t).Header {
		if strings.EqualFold(strings.ReplaceAll(k, "_", "-"), "ssl-client-cert") {
			t.Fatalf("%s reached the upstream", k)
		}
	}
}

// RFC 8705 §6.5: from a trusted ingress the header's certificate is the
// client's, in each format: the bound token passes with its certificate
// and is refused with another; the header never reaches the upstream; a
// malformed one is 400.
func TestCertBoundToken_RFC8705_6_5_TrustedIngressHeader(t *testing.T) {
	for _, tc := range []struct {
		format, header string
		encode         func(*x509.Certificate) string
	}{
		{"pem", "ssl-client-cert", pemHeader},
		{"xfcc", "X-Forwarded-Client-Cert", xfccHeader},
		{"der", "X-Forwarded-Tls-Client-Cert", derHeader},
	} {
		t.Run(tc.format, func(t *testing.T) {
			s := newCertBoundSetup(t, func(c *testSetup) {
				c.ClientCert = ClientCertConfig{Header: tc.header, Format: tc.format, TrustedCIDRs: []string{"127.0.0.0/8", "::1"}}
			})
			resp, body := send(t, http.DefaultClient, "POST", s.plainProxyURL+"/shorten", s.token, map[string]string{tc.header: tc.encode(s.alice.Leaf)})
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("right certificate: %d %s", resp.StatusCode, body)
			}
			if _, ok := s.up.last(t).Header[http.CanonicalHeaderKey(tc.header)]; ok {
				t.Fatal("the client certificate header reached the upstream")
			}
			resp, body = send(t, http.DefaultClient, "POST", s.plainProxyURL+"/shorten", s.token, map[string]string{tc.header: tc.encode(s.mallory.Leaf)})
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "not the one it is bound to") {
				t.Fatalf("another certificate: %d %s, want 401", resp.StatusCode, body)
			}
			resp, body = send(t, http.DefaultClient, "GET", s.plainProxyURL+"/abc1234", "", map[string]string{tc.header: "%%%"})
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "client certificate header") {
				t.Fatalf("malformed header: %d %s, want 400", resp.StatusCode, body)
			}
		})
	}
}

// An ingress that speaks mutual TLS to the proxy with a certificate of
// its own: the header's certificate (the client's) is the one bound
// tokens are checked against, not the ingress's.
func TestCertBoundToken_RFC8705_6_5_HeaderOverIngressMutualTLS(t *testing.T) {
	s := newCertBoundSetup(t, func(c *testSetup) {
		c.ClientCert = ClientCertConfig{Header: "ssl-client-cert", Format: "pem", TrustedCIDRs: []string{"127.0.0.0/8", "::1"}}
	})
	ingress := s.ca.client(t, pkix.Name{CommonName: "ingress"}, nil, nil, nil)
	resp, body := send(t, tlsClient(s.srv, &ingress), "POST", s.srv.URL+"/shorten", s.token, map[string]string{"ssl-client-cert": pemHeader(s.alice.Leaf)})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s, want 200: the header's certificate is the client's", resp.StatusCode, body)
	}
}

// Forward-auth (the verdict endpoint): the certificate comes from the
// ingress's header on its verify request, as for forwarded requests.
func TestCertBoundToken_RFC8705_3_ForwardAuthVerdict(t *testing.T) {
	s := newCertBoundSetup(t, func(c *testSetup) {
		c.ForwardAuth = ForwardAuthConfig{Enabled: true, TrustedCIDRs: []string{"10.1.0.0/16"}}
		c.ClientCert = ClientCertConfig{Header: "ssl-client-cert", Format: "pem"}
	})
	verdict := func(remote string, cert *x509.Certificate) *httptest.ResponseRecorder {
		h := map[string]string{"X-Original-URI": "/shorten", "X-Original-Method": "POST", "Authorization": "Bearer " + s.token}
		if cert != nil {
			h["Ssl-Client-Cert"] = pemHeader(cert)
		}
		w := httptest.NewRecorder()
		s.proxy.ServeHTTP(w, verifyReq("/auth/verify", remote, h))
		return w
	}
	if w := verdict("10.1.2.3:1", s.alice.Leaf); w.Code != http.StatusOK || w.Header().Get("X-Auth-Request-User") == "" {
		t.Fatalf("right certificate: %d %s", w.Code, w.Body)
	}
	if w := verdict("10.1.2.3:1", s.mallory.Leaf); w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "not the one it is bound to") {
		t.Fatalf("another certificate: %d %s", w.Code, w.Body)
	}
	if w := verdict("10.1.2.3:1", nil); w.Code != http.StatusUnauthorized {
		t.Fatalf("no certificate: %d %s", w.Code, w.Body)
	}
	if w := verdict("192.0.2.1:1", s.alice.Leaf); w.Code != http.StatusForbidden {
		t.Fatalf("untrusted source: %d %s", w.Code, w.Body)
	}
	// The dedicated forward-auth listener trusts its callers.
	h := map[string]string{"X-Original-URI": "/shorten", "X-Original-Method": "POST", "Authorization": "Bearer " + s.token, "Ssl-Client-Cert": pemHeader(s.alice.Leaf)}
	w := httptest.NewRecorder()
	s.proxy.ForwardAuthHandler().ServeHTTP(w, verifyReq("/auth/verify", "192.0.2.1:1", h))
	if w.Code != http.StatusOK {
		t.Fatalf("forward-auth listener: %d %s", w.Code, w.Body)
	}
}
