package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// upstreamHeadersTransport answers in process with the headers of a
// typical API answer, CORS headers of its own included.
type upstreamHeadersTransport struct{}

func (upstreamHeadersTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	h := http.Header{
		"Content-Type":                {"application/json"},
		"Vary":                        {"Accept-Encoding"},
		"Access-Control-Allow-Origin": {"*"},
	}
	return &http.Response{StatusCode: 200, Header: h, Body: http.NoBody, Request: r, ProtoMajor: 1, ProtoMinor: 1}, nil
}

// BenchmarkProxyCORS compares the same request (POST /shorten with a
// valid token and an allowed Origin) on the same route without and with a
// CORS policy, in the same run: the cost of the policy on the request path
// (the upstream in process, so that only the proxy's work is measured).
// "preflight" is the preflight the proxy answers itself.
func BenchmarkProxyCORS(b *testing.B) {
	idpSrv := newProvider(b)
	const origin = "https://app.example.com"
	build := func(withCORS bool) *Proxy {
		cfg := testConfig(idpSrv, "http://upstream.invalid")
		cfg.Routes = slices.Clone(realisticRoutes)
		if withCORS {
			i := slices.IndexFunc(cfg.Routes, func(r RouteConfig) bool { return r.Match == "POST /shorten" })
			cfg.Routes[i].CORS = CORSConfig{AllowedOrigins: []string{"https://other.example.com", origin, "https://*.preview.example.com"},
				AllowedHeaders: []string{"Authorization", "Content-Type"}, ExposedHeaders: []string{"Location"}}
		}
		p, err := newProxy(b, cfg, Options{Transport: upstreamHeadersTransport{}})
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Plugin().WaitReady(b.Context()); err != nil {
			b.Fatal(err)
		}
		return p
	}
	plain, cors := build(false), build(true)
	token := "Bearer " + idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	run := func(h http.Handler, method string, hdr http.Header, want int) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest(method, "/shorten", nil)
				for k, v := range hdr {
					r.Header[k] = v
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != want {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		}
	}
	actual := http.Header{"Authorization": {token}, "Origin": {origin}}
	b.Run("plain", run(plain, "POST", actual, 200))
	b.Run("cors", run(cors, "POST", actual, 200))
	b.Run("preflight", run(cors, "OPTIONS", http.Header{"Origin": {origin}, "Access-Control-Request-Method": {"POST"},
		"Access-Control-Request-Headers": {"authorization,content-type"}}, 204))
}
