package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// A rule with client_cert admits machine callers by certificate alone
// (token: optional) when the certificate, verified by the listener's CA,
// matches the subject and SANs; without one it answers 401 with a
// challenge, with a certificate that does not match 403, each naming the
// clause in the body and the access log; a certificate of another CA
// never gets past the handshake.
func TestRouteClientCert_AdmitsByCertificateAlone(t *testing.T) {
	s := newCertBoundSetup(t, func(c *testSetup) {
		c.Routes = append([]RouteConfig{{Match: "POST /batch/", ClientCert: &ClientCertRule{
			Subject: "CN=billing-batch, o=Example", URI: []string{"spiffe://example.org/ns/billing/*"}, Token: "optional"}}}, c.Routes...)
	})
	batch := s.ca.client(t, pkix.Name{CommonName: "billing-batch", Organization: []string{"Example"}}, nil, []string{"spiffe://example.org/ns/billing/sa/batch"}, nil)
	otherName := s.ca.client(t, pkix.Name{CommonName: "reports", Organization: []string{"Example"}}, nil, []string{"spiffe://example.org/ns/billing/sa/batch"}, nil)
	otherURI := s.ca.client(t, pkix.Name{CommonName: "billing-batch", Organization: []string{"Example"}}, nil, []string{"spiffe://example.org/ns/shop/sa/batch"}, nil)

	resp, body := send(t, tlsClient(s.srv, &batch), "POST", s.srv.URL+"/batch/run", "", nil)
	if resp.StatusCode != http.StatusOK || body != "ok" {
		t.Fatalf("matching certificate, no token: %d %s", resp.StatusCode, body)
	}
	if u := s.up.last(t).Header.Get("X-Auth-Request-User"); u != "" {
		t.Fatalf("an identity %q was forwarded for a certificate alone", u)
	}
	for _, tc := range []struct {
		name   string
		cert   *tls.Certificate
		status int
		clause string
	}{
		{"no certificate", nil, http.StatusUnauthorized, "client_cert"},
		{"another subject", &otherName, http.StatusForbidden, "client_cert:subject"},
		{"another URI", &otherURI, http.StatusForbidden, "client_cert:uri"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.up.count()
			s.accessLog.Reset()
			resp, body := send(t, tlsClient(s.srv, tc.cert), "POST", s.srv.URL+"/batch/run", "", nil)
			if resp.StatusCode != tc.status || !strings.Contains(resp.Header.Get("Content-Type"), "application/problem+json") ||
				!strings.Contains(body, "client certificate") {
				t.Fatalf("%d %s %s, want %d problem+json about the client certificate", resp.StatusCode, resp.Header.Get("Content-Type"), body, tc.status)
			}
			if tc.status == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer realm=") {
				t.Fatalf("401 without a challenge: %q", resp.Header.Get("WWW-Authenticate"))
			}
			if s.up.count() != before {
				t.Fatal("a refused request reached the upstream")
			}
			var rec struct{ Clause, Rule string }
			if err := json.Unmarshal(s.accessLog.Bytes(), &rec); err != nil || rec.Clause != tc.clause || rec.Rule != "POST /batch/" {
				t.Fatalf("access log %s: clause %q rule %q, want %q", s.accessLog, rec.Clause, rec.Rule, tc.clause)
			}
			d, err := s.proxy.Decide(context.Background(), "POST", "/batch/run", "")
			if err != nil || d.Status != http.StatusUnauthorized || d.Clause != "client_cert" {
				t.Fatalf("Decide without a certificate = %+v, %v", d, err)
			}
		})
	}
	other := newTestCA(t, "another CA")
	stranger := other.client(t, pkix.Name{CommonName: "billing-batch", Organization: []string{"Example"}}, nil, []string{"spiffe://example.org/ns/billing/sa/batch"}, nil)
	// Sent whatever CAs the server names (Go's client would otherwise
	// keep it back and send none).
	c := tlsClient(s.srv, nil)
	c.Transport.(*http.Transport).TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return &stranger, nil
	}
	req, _ := http.NewRequest("POST", s.srv.URL+"/batch/run", strings.NewReader("{}"))
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a certificate of another CA was accepted: %d", resp.StatusCode)
	}
}

// With token: required (the default) the rule needs both: the matching
// certificate and a valid token passing its other clauses.
func TestRouteClientCert_RequiresCertificateAndToken(t *testing.T) {
	s := newCertBoundSetup(t, func(c *testSetup) {
		c.Routes = append([]RouteConfig{{Match: "POST /batch/", Roles: []string{"creator"},
			ClientCert: &ClientCertRule{DNS: []string{"*.batch.example.org"}, Email: []string{"*@example.org"}}}}, c.Routes...)
	})
	good := s.ca.client(t, pkix.Name{CommonName: "x"}, []string{"a.batch.example.org"}, nil, []string{"Ops@Example.org"})
	deep := s.ca.client(t, pkix.Name{CommonName: "x"}, []string{"a.b.batch.example.org"}, nil, []string{"ops@example.org"})
	for _, tc := range []struct {
		name   string
		cert   *tls.Certificate
		token  string
		status int
	}{
		{"certificate and token", &good, s.bearer, http.StatusOK},
		{"certificate without a token", &good, "", http.StatusUnauthorized},
		{"token without a certificate", nil, s.bearer, http.StatusUnauthorized},
		{"a DNS name two labels down", &deep, s.bearer, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := send(t, tlsClient(s.srv, tc.cert), "POST", s.srv.URL+"/batch/x", tc.token, nil)
			if resp.StatusCode != tc.status {
				t.Fatalf("%d %s, want %d", resp.StatusCode, body, tc.status)
			}
		})
	}
}

func TestCertRuleMatching(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"CN=a,O=b", "CN=a,O=b"},
		{" cn = a , o=b ", "CN=a,O=b"},
		{`CN=a\,b,O=c`, `CN=a\,b,O=c`},
		{"CN=a+UID=x,O=b", "CN=a+UID=x,O=b"},
	} {
		if got, err := normalizeDN(tc.in); err != nil || got != tc.want {
			t.Errorf("normalizeDN(%q) = %q, %v, want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "CN", "CN=", "=a", `CN=a\`, "CN=a,,O=b"} {
		if _, err := normalizeDN(bad); err == nil {
			t.Errorf("normalizeDN(%q) accepted", bad)
		}
	}
	for _, tc := range []struct {
		f       func(p, n string) bool
		p, n    string
		matches bool
	}{
		{matchDNS, "api.example.org", "API.example.org", true},
		{matchDNS, "*.example.org", "a.example.org", true},
		{matchDNS, "*.example.org", "example.org", false},
		{matchDNS, "*.example.org", "a.b.example.org", false},
		{matchDNS, "*.example.org", ".example.org", false},
		{matchURI, "spiffe://e/ns/a/*", "spiffe://e/ns/a/sa/x", true},
		{matchURI, "spiffe://e/ns/a/*", "spiffe://e/ns/ab", false},
		{matchURI, "spiffe://e/x", "spiffe://e/X", false},
		{matchEmail, "*@example.org", "a@EXAMPLE.org", true},
		{matchEmail, "*@example.org", "a@sub.example.org", false},
		{matchEmail, "ops@example.org", "OPS@example.org", true},
	} {
		if got := tc.f(tc.p, tc.n); got != tc.matches {
			t.Errorf("%q ~ %q = %v, want %v", tc.p, tc.n, got, tc.matches)
		}
	}
}

func TestCertRuleConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		rc   RouteConfig
		want string
	}{
		{RouteConfig{Match: "/a", Public: true, ClientCert: &ClientCertRule{}}, "Public excludes ClientCert"},
		{RouteConfig{Match: "/a", Roles: []string{"x"}, ClientCert: &ClientCertRule{Token: "optional"}}, "optional admits by certificate alone"},
		{RouteConfig{Match: "/a", ClientCert: &ClientCertRule{Token: "maybe"}}, `"maybe": want required or optional`},
		{RouteConfig{Match: "/a", ClientCert: &ClientCertRule{Subject: "nonsense"}}, "ClientCert.Subject"},
		{RouteConfig{Match: "/a", ClientCert: &ClientCertRule{DNS: []string{"a.*.org"}}}, "ClientCert.DNS"},
		{RouteConfig{Match: "/a", ClientCert: &ClientCertRule{URI: []string{"spiffe://*/x"}}}, "ClientCert.URI"},
		{RouteConfig{Match: "/a", ClientCert: &ClientCertRule{Email: []string{"a*@x.org"}}}, "ClientCert.Email"},
	} {
		_, err := compileRules([]RouteConfig{tc.rc}, PolicyAuthenticated, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.rc.ClientCert, err, tc.want)
		}
	}
	for _, tc := range []struct {
		c    ClientCertConfig
		want string
	}{
		{ClientCertConfig{Format: "pem"}, "need ClientCert.Header"},
		{ClientCertConfig{Header: "ssl-client-cert"}, "ClientCert.Format is required"},
		{ClientCertConfig{Header: "ssl-client-cert", Format: "base64"}, `ClientCert.Format "base64"`},
		{ClientCertConfig{Header: "bad header", Format: "pem"}, "not a header name"},
		{ClientCertConfig{Header: "Authorization", Format: "pem"}, "another purpose"},
		{ClientCertConfig{Header: "x", Format: "pem", TrustedCIDRs: []string{"10.0.0.0/33"}}, "ClientCert.TrustedCIDRs"},
	} {
		if _, err := compileClientCerts(tc.c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.c, err, tc.want)
		}
	}
}
