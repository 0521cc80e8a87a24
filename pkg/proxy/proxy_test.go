package proxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/problem"
)

func TestPathConfusionIsRejectedBeforeMatching(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	p, px := startProxy(t, testConfig(idpSrv, up.URL), Options{}, true)
	// Through a real server: Go's client and server keep these as sent.
	for _, target := range []string{
		"/health/../admin/users", "/./admin/", "//admin/", "/admin%2Fusers", "/health%2F..%2Fadmin",
		"/abc;jsessionid=x", "/%2e%2e/admin/", "/admin%5cusers", "/abc%252F", "/static/%C0%AE%C0%AE/admin/",
	} {
		resp, body := do(t, "GET", px.URL+target, "", nil, "")
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != problem.ContentType {
			t.Errorf("GET %s: %d %s, want 400 problem+json", target, resp.StatusCode, body)
		}
	}
	// Directly: forms an HTTP client will not send.
	for _, target := range []string{"/a\\b", "*"} {
		r := httptest.NewRequest("GET", "/", nil)
		r.URL.Path, r.URL.RawPath = target, ""
		if target == "*" {
			r = httptest.NewRequest("OPTIONS", "*", nil)
		}
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, r)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%q: %d, want 400", target, rec.Code)
		}
	}
	for _, m := range []string{"TRACE", "CONNECT"} {
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, httptest.NewRequest(m, "/health", nil))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d, want 405", m, rec.Code)
		}
	}
	if up.count() != 0 {
		t.Fatalf("rejected requests reached the upstream: %d", up.count())
	}
	// Accepted paths are forwarded exactly, query untouched and unjudged.
	resp, _ := do(t, "GET", px.URL+"/caf%C3%A9?next=/admin/&x=%2F", "", nil, "")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := up.last(t).RequestURI; got != "/caf%C3%A9?next=/admin/&x=%2F" {
		t.Errorf("upstream request URI %q", got)
	}
}

func TestMaxBodyBytes(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	cfg := testConfig(idpSrv, up.URL)
	cfg.MaxBodyBytes = 16
	_, px := startProxy(t, cfg, Options{}, true)
	alice := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	if resp, _ := do(t, "POST", px.URL+"/shorten", alice, nil, strings.Repeat("x", 17)); resp.StatusCode != 413 {
		t.Errorf("declared length over the limit: %d", resp.StatusCode)
	}
	if up.count() != 0 {
		t.Errorf("an oversized body reached the upstream")
	}
	// Chunked: the limit trips while streaming.
	req, _ := http.NewRequest("POST", px.URL+"/shorten", struct{ *strings.Reader }{strings.NewReader(strings.Repeat("x", 1000))})
	req.Header.Set("Authorization", "Bearer "+alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Errorf("chunked body over the limit: %d", resp.StatusCode)
	}
	if resp, _ := do(t, "POST", px.URL+"/shorten", alice, nil, strings.Repeat("x", 16)); resp.StatusCode != 200 {
		t.Errorf("body at the limit: %d", resp.StatusCode)
	}
}

func TestProviderOutages(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	p, px := startProxy(t, testConfig(idpSrv, up.URL), Options{}, true)
	alice := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	idpSrv.SetDown(true)
	fresh := idpSrv.Mint(idpSrv.UserClaims("shortener", "bob", "creator")) // same key, never seen
	for _, tok := range []string{alice, fresh} {
		if resp, body := do(t, "POST", px.URL+"/shorten", tok, nil, ""); resp.StatusCode != 200 {
			t.Fatalf("provider down after start: %d %s", resp.StatusCode, body)
		}
	}
	ops := httptest.NewServer(p.OpsHandler())
	t.Cleanup(ops.Close)
	if resp, _ := do(t, "GET", ops.URL+"/readyz", "", nil, ""); resp.StatusCode != 200 {
		t.Errorf("readyz with cached keys: %d", resp.StatusCode)
	}

	// Down at start: 503 on protected routes, public ones served, not ready.
	idp2 := newProvider(t)
	idp2.SetDown(true)
	p2, px2 := startProxy(t, testConfig(idp2, up.URL), Options{}, false)
	tok2 := idp2.Mint(idp2.UserClaims("shortener", "alice", "creator"))
	resp, _ := do(t, "POST", px2.URL+"/shorten", tok2, nil, "")
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("provider down at start: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp, _ := do(t, "GET", px2.URL+"/health", "", nil, ""); resp.StatusCode != 200 {
		t.Errorf("public route while the provider is down: %d", resp.StatusCode)
	}
	ops2 := httptest.NewServer(p2.OpsHandler())
	t.Cleanup(ops2.Close)
	resp, body := do(t, "GET", ops2.URL+"/readyz", "", nil, "")
	if resp.StatusCode != 503 || !strings.Contains(body, `"keys_loaded":false`) {
		t.Errorf("readyz: %d %s", resp.StatusCode, body)
	}
	idp2.SetDown(false)
	// Refresh joins a background fetch that may have started while the
	// provider was down; the next one succeeds.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for err := p2.Plugin().Refresh(ctx); err != nil; err = p2.Plugin().Refresh(ctx) {
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if resp, _ := do(t, "POST", px2.URL+"/shorten", tok2, nil, ""); resp.StatusCode != 200 {
		t.Errorf("after recovery: %d", resp.StatusCode)
	}
}
