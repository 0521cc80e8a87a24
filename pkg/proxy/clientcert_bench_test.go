package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// BenchmarkClientCertOverhead: one request through ServeHTTP (the
// upstream a counting transport) with a repeated token, on a connection
// whose TLS state (a verified client certificate) is set as the server
// sets it after the handshake, so that the handshake's cost, the same
// with either token, is left out: a bearer token, a certificate-bound
// token (RFC 8705 §3: one SHA-256 of the certificate and a comparison
// more), the same token with the certificate from a trusted ingress's
// header (a certificate parsed per request), and a route admitting by
// certificate alone. Counted with callgrind like BenchmarkProxyOverhead.
func BenchmarkClientCertOverhead(b *testing.B) {
	idpSrv := newProvider(b)
	tr := &countingTransport{}
	ca := newTestCA(b, "clients")
	alice := ca.client(b, pkix.Name{CommonName: "billing-batch", Organization: []string{"Example"}}, nil, []string{"spiffe://example.org/ns/billing/sa/batch"}, nil)
	cfg := testConfig(idpSrv, "http://upstream.invalid")
	cfg.IDP.HTTPClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	cfg.Routes = append([]RouteConfig{{Match: "POST /batch/", ClientCert: &ClientCertRule{
		Subject: "CN=billing-batch,O=Example", URI: []string{"spiffe://example.org/ns/billing/*"}, Token: CertTokenOptional}}}, cfg.Routes...)
	headers := map[string]*Proxy{}
	for _, f := range []string{"pem", "xfcc"} {
		hc := cfg
		hc.ClientCert = ClientCertConfig{Header: "X-Client-Cert", Format: f, TrustedCIDRs: []string{"192.0.2.0/24"}} // httptest's peer
		hp, err := newProxy(b, hc, Options{Transport: tr})
		if err != nil {
			b.Fatal(err)
		}
		headers[f] = hp
	}
	p, err := newProxy(b, cfg, Options{Transport: tr})
	if err != nil {
		b.Fatal(err)
	}
	for _, px := range []*Proxy{p, headers["pem"], headers["xfcc"]} {
		if err := px.Plugin().WaitReady(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	claims := idpSrv.UserClaims("shortener", "alice", "creator")
	bearer := "Bearer " + idpSrv.Mint(claims)
	bound := "Bearer " + idpSrv.MintCertBound(claims, alice.Leaf)
	state := &tls.ConnectionState{Version: tls.VersionTLS13, HandshakeComplete: true,
		PeerCertificates: []*x509.Certificate{alice.Leaf}, VerifiedChains: [][]*x509.Certificate{{alice.Leaf, ca.cert}}}
	for _, bc := range []struct {
		name, path, auth string
		h                http.Handler
		tls              bool
		header           string
	}{
		{"bearer-tls", "/shorten", bearer, p, true, ""},
		{"cert-bound-tls", "/shorten", bound, p, true, ""},
		{"cert-bound-header-pem", "/shorten", bound, headers["pem"], false, pemHeader(alice.Leaf)},
		{"cert-bound-header-xfcc", "/shorten", bound, headers["xfcc"], false, xfccHeader(alice.Leaf)},
		{"route-certificate-alone-tls", "/batch/run", "", p, true, ""},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			u, _ := url.Parse(bc.path)
			instrStart()
			for b.Loop() {
				r := httptest.NewRequest("POST", bc.path, nil)
				r.URL = u
				if bc.auth != "" {
					r.Header.Set("Authorization", bc.auth)
				}
				if bc.tls {
					r.TLS = state
				}
				if bc.header != "" {
					r.Header.Set("X-Client-Cert", bc.header)
				}
				w := httptest.NewRecorder()
				bc.h.ServeHTTP(w, r)
				if w.Code != 200 {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
			instrStop()
		})
	}
}
