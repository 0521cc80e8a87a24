package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

func BenchmarkRuleMatch(b *testing.B) {
	rs, err := compileRules(realisticRoutes, PolicyAuthenticated, []string{"/favicon.ico"})
	if err != nil {
		b.Fatal(err)
	}
	reqs := []*http.Request{
		httptest.NewRequest("GET", "/health", nil),
		httptest.NewRequest("GET", "/abc1234", nil),
		httptest.NewRequest("POST", "/shorten", nil),
		httptest.NewRequest("POST", "/admin/users/7", nil),
		httptest.NewRequest("GET", "/api/v1/items/a/b", nil),
		httptest.NewRequest("GET", "/no/rule/here", nil),
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r := reqs[i%len(reqs)]
		if checkPath(r.URL.EscapedPath()) != "" || rs.match(r) == nil {
			b.Fatal("no rule")
		}
	}
}

func BenchmarkHeaderRewrite(b *testing.B) {
	h := newHeaderRules(DefaultConfig().Headers)
	base := http.Header{
		"Accept":              {"application/json"},
		"Accept-Encoding":     {"gzip, br"},
		"Authorization":       {"Bearer x.y.z"},
		"Content-Type":        {"application/json"},
		"Content-Length":      {"42"},
		"User-Agent":          {"curl/8.5.0"},
		"X-Auth-Request-User": {"spoofed"},
		"X_Auth_Request_User": {"spoofed"},
		"X-Forwarded-For":     {"203.0.113.9"},
		"Cookie":              {"a=b"},
	}
	u := &idp.User{Sub: "f7a3c1d2-0000-4000-8000-0123456789ab", PreferredUsername: "alice", Email: "alice@example.com",
		RealmRoles: []string{"offline_access", "default-roles-demo", "creator"}}
	id := &idp.Identity{User: u, Payload: &idp.TokenPayload{EmailVerified: true}, Raw: "x.y.z"}
	b.Run("strip", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			hdr := base.Clone()
			h.stripAll(hdr)
		}
	})
	b.Run("strip+set", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			hdr := base.Clone()
			h.stripAll(hdr)
			h.setIdentity(hdr, id, []string{"Bearer x.y.z"})
		}
	})
	claimsRules := newHeaderRules(func() HeadersConfig {
		c := DefaultConfig().Headers
		c.Claims = map[string]string{"X-Auth-Request-Tenant": "tid", "X-Auth-Request-Groups": "groups"}
		return c
	}())
	raw := []byte(`{"sub":"f7a3c1d2-0000-4000-8000-0123456789ab","tid":"9188040d-6c67-4c5b-b112-36a304b66dad",` +
		`"groups":["eng","ops"],"realm_access":{"roles":["offline_access","default-roles-demo","creator"]},` +
		`"scope":"openid email profile","email_verified":true,"preferred_username":"alice","email":"alice@example.com"}`)
	cid := &idp.Identity{User: u, Payload: &idp.TokenPayload{EmailVerified: true, Raw: raw}, Raw: "x.y.z"}
	b.Run("strip+set, 2 claim headers", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			hdr := base.Clone()
			claimsRules.stripAll(hdr)
			claimsRules.setIdentity(hdr, cid, []string{"Bearer x.y.z"})
		}
	})
	b.Run("strip+set, 2 claim headers, new identity", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			hdr := base.Clone()
			claimsRules.stripAll(hdr)
			u2 := *u
			claimsRules.setIdentity(hdr, &idp.Identity{User: &u2, Payload: &idp.TokenPayload{EmailVerified: true, Raw: raw}, Raw: "x.y.z"}, []string{"Bearer x.y.z"})
		}
	})
	b.Run("clone-only", func(b *testing.B) { // the baseline the two above include
		b.ReportAllocs()
		for b.Loop() {
			_ = base.Clone()
		}
	})
}

// BenchmarkProxy compares a full request through idp-proxy (valid RS256
// token, cached after the first request, a role rule, identity headers)
// with a bare httputil.ReverseProxy to the same loopback upstream, in the
// same run. Report the ratio of the two ns/op.
func BenchmarkProxy(b *testing.B) {
	idpSrv := newProvider(b)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"status":"ok"}`)
	}))
	b.Cleanup(upstream.Close)
	target, _ := url.Parse(upstream.URL)

	tr1, _ := newTransport(DefaultConfig().withDefaults().Upstream)
	tr2, _ := newTransport(DefaultConfig().withDefaults().Upstream)
	bare := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
		},
		Transport: tr1,
	}
	// The same with the 32 KiB copy buffers pooled, as idp-proxy does.
	pooled := &httputil.ReverseProxy{
		Rewrite:    bare.Rewrite,
		Transport:  tr2,
		BufferPool: newBufferPool(),
	}
	cfg := testSetup{Config: DefaultConfig()}
	cfg.Upstream.URL = upstream.URL
	cfg.IDP.ServerURL, cfg.IDP.Realm, cfg.IDP.ClientID = idpSrv.URL, idpSrv.Realm, "shortener"
	cfg.Routes = realisticRoutes
	p, err := newProxy(b, cfg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Plugin().WaitReady(b.Context()); err != nil {
		b.Fatal(err)
	}
	token := "Bearer " + idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))

	serve := func(h http.Handler) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest("POST", "/shorten", nil)
				r.Header.Set("Authorization", token)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != 200 {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		}
	}
	parallel := func(h http.Handler) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r := httptest.NewRequest("POST", "/shorten", nil)
					r.Header.Set("Authorization", token)
					w := httptest.NewRecorder()
					h.ServeHTTP(w, r)
					if w.Code != 200 {
						b.Errorf("status %d", w.Code)
						return
					}
				}
			})
		}
	}
	b.Run("bare-reverseproxy", serve(bare))
	b.Run("bare-reverseproxy-bufpool", serve(pooled))
	b.Run("idp-proxy", serve(p))
	b.Run("bare-reverseproxy-parallel", parallel(bare))
	b.Run("bare-reverseproxy-bufpool-parallel", parallel(pooled))
	b.Run("idp-proxy-parallel", parallel(p))
}

// BenchmarkProxyOverhead isolates the proxy's own cost: the upstream is an
// in-process RoundTripper, so network and upstream parsing are left out.
func BenchmarkProxyOverhead(b *testing.B) {
	idpSrv := newProvider(b)
	tr := &countingTransport{}
	target, _ := url.Parse("http://upstream.invalid")
	bare := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
		},
		Transport:  tr,
		BufferPool: newBufferPool(),
	}
	cfg := testConfig(idpSrv, target.String())
	// No keep-alive connection to the provider stays open during the
	// loop: its idle read loops would add instructions with wall time
	// under callgrind.
	noKeepAlive := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	cfg.IDP.HTTPClient = noKeepAlive
	p, err := newProxy(b, cfg, Options{Transport: tr})
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Plugin().WaitReady(b.Context()); err != nil {
		b.Fatal(err)
	}
	// The same proxy tracing every request (three spans), batched to an
	// exporter that drops them: the cost of recording, not of exporting.
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(discardExporter{}))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	cfg.IDP.TracerProvider = tp
	traced, err := newProxy(b, cfg, Options{Transport: tr, TracerProvider: tp})
	if err != nil {
		b.Fatal(err)
	}
	if err := traced.Plugin().WaitReady(b.Context()); err != nil {
		b.Fatal(err)
	}
	// The same proxy with the other credential modes: a repeated token
	// through assertion is one cache look-up more than forward.
	modes := map[string]*Proxy{}
	for _, mode := range []string{CredentialNone, CredentialAssertion} {
		mc := testConfig(idpSrv, target.String())
		mc.Upstream.Credential = mode
		mc.IDP.HTTPClient = noKeepAlive
		mc.Assertion.IssuerURL, mc.Assertion.KeyFile = "https://proxy.example.com/.idp-proxy", filepath.Join(b.TempDir(), "keys.pem")
		mp, err := newProxy(b, mc, Options{Transport: tr})
		if err != nil {
			b.Fatal(err)
		}
		if err := mp.Plugin().WaitReady(b.Context()); err != nil {
			b.Fatal(err)
		}
		modes[mode] = mp
	}
	token := "Bearer " + idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{{"bare-reverseproxy", bare}, {"idp-proxy", p}, {"idp-proxy-traced", traced},
		{"idp-proxy-credential-none", modes[CredentialNone]}, {"idp-proxy-credential-assertion", modes[CredentialAssertion]}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			instrStart()
			for b.Loop() {
				r := httptest.NewRequest("POST", "/shorten", nil)
				r.Header.Set("Authorization", token)
				w := httptest.NewRecorder()
				bc.h.ServeHTTP(w, r)
				if w.Code != 200 {
					b.Fatalf("status %d", w.Code)
				}
			}
			instrStop()
		})
	}
}

// instrStart and instrStop mark a benchmark loop for callgrind, which
// counts the instructions between them:
//
//	valgrind --tool=callgrind --zero-before='*instrStart' --dump-before='*instrStop' \
//	  ./proxy.test -test.run '^$' -test.bench 'ProxyOverhead/idp-proxy$' -test.benchtime 5000x
//
// (the last dump holds the 5000 requests).
//
//go:noinline
func instrStart() {}

//go:noinline
func instrStop() {}

// discardExporter drops the spans it is given.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }
