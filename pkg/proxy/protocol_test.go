package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"github.com/idp-proxy/idp-proxy/internal/testsupport"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestUpstreamProtocolChecked: the upstream section's protocol must fit
// its URL's scheme; upstreams[] inherit it unless they set their own.
func TestUpstreamProtocolChecked(t *testing.T) {
	idpSrv := newProvider(t)
	for _, c := range []struct {
		url, protocol string
		stream        time.Duration
		want          string // "" when valid
	}{
		{"http://x", ProtocolH2C, 0, ""},
		{"https://x", ProtocolH2, time.Minute, ""},
		{"http://x", ProtocolHTTP1, 0, ""},
		{"https://x", ProtocolAuto, 0, ""},
		{"http://x", ProtocolH2, 0, "Upstream.Protocol h2 is HTTP/2 over TLS"},
		{"https://x", ProtocolH2C, 0, "Upstream.Protocol h2c is HTTP/2 without TLS"},
		{"http://x", "HTTP2", 0, `Upstream.Protocol "HTTP2"`},
		{"http://x", "", -time.Second, "Upstream.StreamTimeout must not be negative"},
	} {
		s := testConfig(idpSrv, c.url)
		s.Upstream.Protocol, s.Upstream.StreamTimeout = c.protocol, c.stream
		_, err := Compile(s.Config, s.IDP)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s %q %s: %v, want %q", c.url, c.protocol, c.stream, err, c.want)
		}
	}
	// Inherited: the section's h2c, with an https upstream of its own
	// that says auto.
	s := testConfig(idpSrv, "")
	s.Upstream.Protocol = ProtocolH2C
	s.Upstreams = []UpstreamRoute{
		{Match: "a.test/", UpstreamConfig: UpstreamConfig{URL: "http://x"}},
		{Match: "b.test/", UpstreamConfig: UpstreamConfig{URL: "https://y", Protocol: ProtocolAuto}},
	}
	if _, err := Compile(s.Config, s.IDP); err != nil {
		t.Errorf("inherited protocol: %v", err)
	}
	s.Upstreams[1].Protocol = ""
	if _, err := Compile(s.Config, s.IDP); err == nil || !strings.Contains(err.Error(), "Upstreams[1].Protocol h2c") {
		t.Errorf("inherited h2c on https: %v", err)
	}
}

// TestUpstreamProtocols: the protocol the proxy speaks to the upstream,
// as the upstream sees it.
func TestUpstreamProtocols(t *testing.T) {
	idpSrv := newProvider(t)
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, r.Proto) })
	tlsUp := httptest.NewUnstartedServer(echo)
	tlsUp.EnableHTTP2 = true
	tlsUp.StartTLS()
	t.Cleanup(tlsUp.Close)
	plainUp := httptest.NewUnstartedServer(echo)
	plainUp.Config.Protocols = new(http.Protocols)
	plainUp.Config.Protocols.SetHTTP1(true)
	plainUp.Config.Protocols.SetUnencryptedHTTP2(true)
	plainUp.Start()
	t.Cleanup(plainUp.Close)
	ca := writePEM(t, tlsUp)
	for _, c := range []struct{ url, protocol, want string }{
		{tlsUp.URL, ProtocolAuto, "HTTP/2.0"},
		{tlsUp.URL, ProtocolH2, "HTTP/2.0"},
		{tlsUp.URL, ProtocolHTTP1, "HTTP/1.1"},
		{plainUp.URL, ProtocolAuto, "HTTP/1.1"},
		{plainUp.URL, ProtocolH2C, "HTTP/2.0"},
	} {
		cfg := testConfig(idpSrv, c.url)
		cfg.Upstream.Protocol, cfg.Upstream.CAFile = c.protocol, ca
		cfg.Routes = []RouteConfig{{Match: "/", Public: true}}
		_, srv := startProxy(t, cfg, Options{}, false)
		if resp, body := do(t, "GET", srv.URL+"/", "", nil, ""); resp.StatusCode != 200 || body != c.want {
			t.Errorf("%s %q: %d %q, want %s", c.url, c.protocol, resp.StatusCode, body, c.want)
		}
	}
}

// selfSignedPair returns a certificate for 127.0.0.1 and the path of a
// PEM file holding it (as a CA file).
func selfSignedPair(t *testing.T) (tls.Certificate, string) {
	c := testsupport.SelfSigned(t, "127.0.0.1", x509.ExtKeyUsageServerAuth)
	return c.TLS, c.CertFile
}
