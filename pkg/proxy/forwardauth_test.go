package proxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// verifyReq is a verify request as an ingress sends it.
func verifyReq(path, remote string, hdr map[string]string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.RemoteAddr = remote
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	return r
}

func TestForwardAuthVerdicts(t *testing.T) {
	idpSrv := newProvider(t)
	tr := &countingTransport{}
	cfg := testConfig(idpSrv, "http://upstream.invalid")
	cfg.ForwardAuth = ForwardAuthConfig{Enabled: true, TrustedCIDRs: []string{"10.1.0.0/16", "192.0.2.7"}}
	p, _ := startProxy(t, cfg, Options{Transport: tr}, true)
	creator := "Bearer " + idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	plain := "Bearer " + idpSrv.Mint(idpSrv.UserClaims("shortener", "bob"))
	const ingress = "10.1.2.3:5555"
	for _, tc := range []struct {
		name   string
		path   string
		remote string
		hdr    map[string]string
		status int
		user   string
	}{
		{"untrusted source", "/auth/verify", "203.0.113.9:1", map[string]string{"X-Original-URI": "/abc1234"}, 403, ""},
		{"untrusted, oauth2-proxy path", "/oauth2/auth", "[2001:db8::1]:1", map[string]string{"X-Forwarded-Uri": "/abc1234"}, 403, ""},
		{"public route", "/auth/verify", ingress, map[string]string{"X-Original-URI": "/abc1234"}, 200, ""},
		{"public route, valid token: identity", "/oauth2/auth", ingress, map[string]string{"X-Forwarded-Uri": "/abc1234", "Authorization": plain}, 200, "user-bob"},
		{"protected, no token", "/auth/verify", ingress, map[string]string{"X-Original-URI": "/shorten", "X-Original-Method": "POST"}, 401, ""},
		{"protected, no role", "/auth/verify", ingress, map[string]string{"X-Original-URI": "/shorten", "X-Original-Method": "POST", "Authorization": plain}, 403, ""},
		{"protected, role", "/auth/verify", "192.0.2.7:9", map[string]string{"X-Original-URI": "/shorten", "X-Original-Method": "POST", "Authorization": creator}, 200, "user-alice"},
		{"traefik method header", "/auth/verify", ingress, map[string]string{"X-Forwarded-Uri": "/shorten", "X-Forwarded-Method": "POST", "Authorization": creator}, 200, "user-alice"},
		{"method judged: GET /shorten is the default rule", "/auth/verify", ingress, map[string]string{"X-Original-URI": "/shorten", "Authorization": plain}, 200, "user-bob"},
		// nginx passes on only 401 and 403: refusals of the original
		// request are 403 there, 400 for Traefik and Caddy.
		{"dot segments", "/auth/verify", ingress, map[string]string{"X-Original-URI": "/health/../shorten", "X-Original-Method": "POST"}, 403, ""},
		{"encoded slash", "/auth/verify", ingress, map[string]string{"X-Original-URI": "/admin%2Fx", "Authorization": creator}, 403, ""},
		{"dot segments, traefik", "/auth/verify", ingress, map[string]string{"X-Forwarded-Uri": "/health/../shorten", "X-Forwarded-Method": "POST"}, 400, ""},
		{"double slash", "/auth/verify", ingress, map[string]string{"X-Forwarded-Uri": "//admin/", "Authorization": creator}, 400, ""},
		{"absolute URI", "/auth/verify", ingress, map[string]string{"X-Original-URI": "http://evil/abc"}, 400, ""},
		{"no original", "/auth/verify", ingress, nil, 400, ""},
		{"ingress-nginx URL", "/auth/verify", ingress, map[string]string{"X-Original-URL": "https://sho.example/shorten", "X-Original-Method": "POST", "Authorization": creator}, 200, "user-alice"},
		{"ingress-nginx URL, confusion kept", "/auth/verify", ingress, map[string]string{"X-Original-URL": "https://sho.example/health/../shorten", "X-Original-Method": "POST"}, 403, ""},
		{"ingress-nginx URL with user info", "/auth/verify", ingress, map[string]string{"X-Original-URL": "https://a@sho.example/x"}, 400, ""},
		{"ingress-nginx URL not absolute", "/auth/verify", ingress, map[string]string{"X-Original-URL": "/x"}, 400, ""},
		{"lower-case method", "/auth/verify", ingress, map[string]string{"X-Forwarded-Uri": "/shorten", "X-Forwarded-Method": "post"}, 405, ""},
		{"lower-case method, nginx", "/auth/verify", ingress, map[string]string{"X-Original-URI": "/shorten", "X-Original-Method": "post"}, 403, ""},
		{"bad proto", "/auth/verify", ingress, map[string]string{"X-Original-URI": "/abc", "X-Forwarded-Proto": "gopher"}, 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			p.ServeHTTP(w, verifyReq(tc.path, tc.remote, tc.hdr))
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			if got := w.Header().Get("X-Auth-Request-User"); got != tc.user {
				t.Fatalf("X-Auth-Request-User %q, want %q", got, tc.user)
			}
			if _, present := w.Header()["X-Auth-Request-User"]; w.Code == 200 && !present {
				t.Fatal("a 200 verdict without the identity header: an ingress copying it would keep the client's")
			}
			if tc.user != "" && !strings.HasPrefix(w.Header().Get("Authorization"), "Bearer ") {
				t.Fatal("no Authorization header for the ingress to forward")
			}
			if w.Code != 200 && w.Header().Get("Content-Type") != "application/problem+json" {
				t.Fatalf("refusal without problem+json: %q", w.Header().Get("Content-Type"))
			}
		})
	}
	// Repeated description headers are ambiguous.
	r := verifyReq("/auth/verify", ingress, nil)
	r.Header.Add("X-Original-URI", "/abc1234")
	r.Header.Add("X-Original-URI", "/shorten")
	w := httptest.NewRecorder()
	p.ServeHTTP(w, r)
	if w.Code != 400 {
		t.Fatalf("two X-Original-URI: %d, want 400", w.Code)
	}
	if n := tr.n.Load(); n != 0 {
		t.Fatalf("verify requests reached the upstream %d times", n)
	}
}

// Session mode: a browser navigation without a session is sent to the
// login through Traefik and Caddy (which pass the auth server's answer
// on), but gets 401 through nginx (auth_request takes no redirect).
func TestForwardAuthSignInRedirect(t *testing.T) {
	idpSrv := sessionProvider(t)
	up := newUpstream(t)
	p, _ := sessionProxy(t, idpSrv, up.URL, func(c *testSetup) {
		c.ForwardAuth = ForwardAuthConfig{Enabled: true, TrustedCIDRs: []string{"127.0.0.0/8"}}
	})
	nav := map[string]string{"Accept": "text/html", "Sec-Fetch-Mode": "navigate"}
	with := func(k, v string) map[string]string {
		m := map[string]string{k: v}
		for a, b := range nav {
			m[a] = b
		}
		return m
	}
	w := httptest.NewRecorder()
	p.ServeHTTP(w, verifyReq("/auth/verify", "127.0.0.1:1", with("X-Forwarded-Uri", "/app/page?x=1")))
	if w.Code != http.StatusFound || w.Header().Get("Location") != "/auth/login?return_to=%2Fapp%2Fpage%3Fx%3D1" {
		t.Fatalf("traefik-style navigation: %d %q", w.Code, w.Header().Get("Location"))
	}
	w = httptest.NewRecorder()
	p.ServeHTTP(w, verifyReq("/auth/verify", "127.0.0.1:1", with("X-Original-URI", "/app/page")))
	if w.Code != http.StatusUnauthorized || w.Header().Get("X-Auth-Request-Redirect") != "/auth/login?return_to=%2Fapp%2Fpage" {
		t.Fatalf("nginx-style navigation: %d %q, want 401 with the login URL for error_page", w.Code, w.Header().Get("X-Auth-Request-Redirect"))
	}
}

// Forward-auth only: no upstream; the verify endpoint works, nothing is
// forwarded; ForwardAuthHandler trusts its own listener.
func TestForwardAuthOnly(t *testing.T) {
	idpSrv := newProvider(t)
	cfg := testConfig(idpSrv, "")
	cfg.ForwardAuth = ForwardAuthConfig{Enabled: true}
	p, srv := startProxy(t, cfg, Options{}, true)
	if resp, _ := do(t, "GET", srv.URL+"/abc1234", "", nil, ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("forward-auth only, a plain request: %d, want 404", resp.StatusCode)
	}
	if resp, _ := do(t, "GET", srv.URL+"/auth/verify", "", map[string]string{"X-Original-URI": "/abc1234"}, ""); resp.StatusCode != 403 {
		t.Fatalf("no trusted CIDRs, main handler: %d, want 403", resp.StatusCode)
	}
	fa := httptest.NewServer(p.ForwardAuthHandler())
	t.Cleanup(fa.Close)
	if resp, _ := do(t, "GET", fa.URL+"/auth/verify", "", map[string]string{"X-Original-URI": "/abc1234"}, ""); resp.StatusCode != 200 {
		t.Fatalf("forward-auth listener: %d, want 200", resp.StatusCode)
	}
	if resp, _ := do(t, "GET", fa.URL+"/abc1234", "", nil, ""); resp.StatusCode != 404 {
		t.Fatalf("forward-auth listener, other path: %d, want 404", resp.StatusCode)
	}
	cfg.ForwardAuth = ForwardAuthConfig{}
	if _, err := newProxy(t, cfg, Options{}); err == nil || !strings.Contains(err.Error(), "Upstream.URL is required") {
		t.Fatalf("no upstream without forward_auth: %v", err)
	}
	cfg.ForwardAuth = ForwardAuthConfig{Enabled: true, TrustedCIDRs: []string{"10.0.0.0/33"}}
	if _, err := newProxy(t, cfg, Options{}); err == nil || !strings.Contains(err.Error(), "TrustedCIDRs") {
		t.Fatalf("bad CIDR: %v", err)
	}
}
