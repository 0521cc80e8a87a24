package proxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/internal/testsupport"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// sessionProxy serves a proxy in session mode in front of up, with the
// login routes, and returns its URL.
func sessionProxy(t testing.TB, idpSrv *idptest.Server, up string, mutate func(*testSetup)) (*Proxy, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	cfg := testSetup{Config: DefaultConfig()}
	cfg.Upstream.URL = up
	cfg.IDP.ServerURL, cfg.IDP.Realm, cfg.IDP.ClientID = idpSrv.URL, idpSrv.Realm, "shortener"
	cfg.IDP.ClientSecret = "shortener-secret"
	cfg.IDP.IncludeRoutes = true
	cfg.IDP.RedirectURI = base + "/auth/callback"
	cfg.IDP.SessionSecret = []byte(strings.Repeat("s", 32))
	cfg.IDP.Session = &idp.SessionConfig{}
	cfg.Routes = []RouteConfig{
		{Match: "GET /public", Public: true},
		{Match: "/app/", Roles: []string{"creator"}},
		{Match: "/admin/", Roles: []string{"admin"}},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	p, err := newProxy(t, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Plugin().WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(p)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return p, base
}

func sessionProvider(t testing.TB) *idptest.Server {
	srv := idptest.NewServer(t, idptest.Options{Clients: []idptest.Client{{ID: "shortener", Secret: "shortener-secret"}}})
	srv.SetUser(idptest.User{Username: "alice", RealmRoles: []string{"creator"}})
	return srv
}

// browser and navigate walk a sign-in one hop at a time.
var (
	browser  = testsupport.Browser
	navigate = testsupport.Navigate
)

// A web app behind the proxy: the browser is signed in and brought back;
// the upstream gets the identity headers and the access token, never the
// session cookie; the upstream cannot set the session cookie; roles are
// judged as for bearer tokens.
func TestProxySessionSignIn(t *testing.T) {
	idpSrv := sessionProvider(t)
	up := newUpstream(t)
	_, base := sessionProxy(t, idpSrv, up.URL, nil)
	c := browser(t)

	if resp, _ := do(t, "GET", base+"/app/page?x=1", "", map[string]string{"Accept": "application/json"}, ""); resp.StatusCode != 401 {
		t.Fatalf("API call without credentials: %d, want 401", resp.StatusCode)
	}
	resp := navigate(t, c, base+"/app/page?x=1")
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || loc.Path != "/auth/login" || loc.Query().Get("return_to") != "/app/page?x=1" {
		t.Fatalf("navigation without a session: %d %s", resp.StatusCode, loc)
	}
	if up.count() != 0 {
		t.Fatal("the upstream saw an unauthenticated request")
	}
	resp = navigate(t, c, base+loc.String())           // login → provider
	resp = navigate(t, c, resp.Header.Get("Location")) // provider → callback
	resp = navigate(t, c, resp.Header.Get("Location")) // callback → page
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/app/page?x=1" {
		t.Fatalf("callback: %d → %q, want 302 back to the page", resp.StatusCode, resp.Header.Get("Location"))
	}
	r, _ := http.NewRequest(http.MethodGet, base+"/app/page?x=1", nil)
	r.AddCookie(&http.Cookie{Name: "theme", Value: "dark"})
	resp, err := c.Do(r)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the page with the session: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	got := up.last(t)
	if got.Header.Get("X-Auth-Request-User") != "user-alice" || !strings.HasPrefix(got.Header.Get("Authorization"), "Bearer ey") {
		t.Fatalf("upstream headers: user %q, authorization %q", got.Header.Get("X-Auth-Request-User"), got.Header.Get("Authorization"))
	}
	if ck := got.Header.Get("Cookie"); strings.Contains(ck, idp.DefaultSessionCookie) || !strings.Contains(ck, "theme=dark") {
		t.Fatalf("upstream Cookie header %q: want theme only, never the session", ck)
	}
	// Roles apply to sessions as to bearer tokens.
	if resp := navigate(t, c, base+"/admin/x"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("session without the role: %d, want 403", resp.StatusCode)
	}
}

// CORS preflights reach the upstream without a token only when
// skip_auth_preflight is on.
func TestSkipAuthPreflight(t *testing.T) {
	idpSrv := sessionProvider(t)
	up := newUpstream(t)
	pre := map[string]string{"Origin": "https://spa.example", "Access-Control-Request-Method": "POST"}
	_, off := sessionProxy(t, idpSrv, up.URL, nil)
	if resp, _ := do(t, "OPTIONS", off+"/app/x", "", pre, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("preflight with skip_auth_preflight off: %d, want 401", resp.StatusCode)
	}
	_, on := sessionProxy(t, idpSrv, up.URL, func(c *testSetup) { c.SkipAuthPreflight = true })
	if resp, _ := do(t, "OPTIONS", on+"/app/x", "", pre, ""); resp.StatusCode != 200 || up.count() != 1 {
		t.Fatalf("preflight with skip_auth_preflight on: %d, upstream saw %d", resp.StatusCode, up.count())
	}
	// Only preflights: a plain OPTIONS, or one without Origin, still needs a token.
	if resp, _ := do(t, "OPTIONS", on+"/app/x", "", map[string]string{"Access-Control-Request-Method": "POST"}, ""); resp.StatusCode != 401 {
		t.Fatalf("OPTIONS without Origin: %d, want 401", resp.StatusCode)
	}
}

// signInThrough signs a browser in through the proxy at base and returns
// its cookies for base.
func signInThrough(t testing.TB, base string) []*http.Cookie {
	t.Helper()
	c := browser(t)
	resp := navigate(t, c, base+"/app/page")
	resp = navigate(t, c, base+resp.Header.Get("Location"))
	resp = navigate(t, c, resp.Header.Get("Location"))
	if resp = navigate(t, c, resp.Header.Get("Location")); resp.StatusCode != http.StatusFound {
		t.Fatalf("sign-in through the proxy: callback %d", resp.StatusCode)
	}
	u, _ := url.Parse(base)
	return c.Jar.Cookies(u)
}

// BenchmarkProxySession compares requests carrying a browser session
// (cookie store, the tokens sealed in the cookie) with bearer requests
// and with a bare httputil.ReverseProxy, same upstream, same run. The
// opened session is cached like a verified token, so a session request
// costs a keyed hash of the cookie on top of the bearer path.
func BenchmarkProxySession(b *testing.B) {
	idpSrv := sessionProvider(b)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"status":"ok"}`)
	}))
	b.Cleanup(upstream.Close)
	target, _ := url.Parse(upstream.URL)
	tr, _ := newTransport(DefaultConfig().withDefaults().Upstream)
	bare := &httputil.ReverseProxy{
		Rewrite:    func(pr *httputil.ProxyRequest) { pr.SetURL(target); pr.SetXForwarded() },
		Transport:  tr,
		BufferPool: newBufferPool(),
	}
	p, base := sessionProxy(b, idpSrv, upstream.URL, nil)
	cookies := signInThrough(b, base)
	var header string
	for _, c := range cookies {
		if header != "" {
			header += "; "
		}
		header += c.Name + "=" + c.Value
	}
	token := "Bearer " + idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	run := func(h http.Handler, set func(*http.Request)) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r := httptest.NewRequest("GET", "/app/page", nil)
					set(r)
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
	b.Run("bare-reverseproxy", run(bare, func(r *http.Request) { r.Header.Set("Cookie", header) }))
	b.Run("idp-proxy-bearer", run(p, func(r *http.Request) { r.Header.Set("Authorization", token) }))
	b.Run("idp-proxy-session", run(p, func(r *http.Request) { r.Header.Set("Cookie", header) }))
}
