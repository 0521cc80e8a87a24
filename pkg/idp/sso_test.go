package idp_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/publicsuffix"

	"github.com/idp-proxy/idp-proxy/internal/testneed"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
	"github.com/idp-proxy/idp-proxy/pkg/idp/redisstore"
)

// ssoEnv is one https application serving the hosts login.example.com
// (the central callback), a.example.com and b.example.com, all resolved to
// its loopback listener, with a session cookie for the domain example.com.
type ssoEnv struct {
	*flowEnv
	port string
}

func newSSOEnv(t *testing.T, backend idp.SessionBackend, hosts ...string) *ssoEnv {
	t.Helper()
	return newSSOEnvWith(t, backend, nil, hosts...)
}

// newSSOEnvWith is newSSOEnv with mutate applied to the plugin's Config.
func newSSOEnvWith(t *testing.T, backend idp.SessionBackend, mutate func(*idp.Config), hosts ...string) *ssoEnv {
	t.Helper()
	srv := idptest.NewServer(t, idptest.Options{Clients: []idptest.Client{{ID: clientID, Secret: clientSecret}}})
	mux := http.NewServeMux()
	app := httptest.NewUnstartedServer(mux)
	_, port, _ := net.SplitHostPort(app.Listener.Addr().String())
	if len(hosts) == 0 {
		hosts = []string{"*.example.com:*"}
	}
	p := newPlugin(t, srv, func(c *idp.Config) {
		c.ClientSecret = clientSecret
		c.IncludeRoutes = true
		c.RedirectURI = "https://login.example.com:" + port + "/auth/callback"
		c.SessionSecret = []byte(sessionSecret)
		c.AllowedRedirectHosts = hosts
		c.Session = &idp.SessionConfig{Backend: backend, CookieDomain: ".example.com"}
		if mutate != nil {
			mutate(c)
		}
	})
	mux.Handle(p.Config().AuthPrefix+"/", p.Routes())
	me := p.WithUser(func(w http.ResponseWriter, r *http.Request, u *idp.User) {
		_, _ = io.WriteString(w, r.Host+" "+u.PreferredUsername)
	})
	mux.Handle("GET /me", me)
	mux.Handle("POST /me", me)
	app.StartTLS()
	t.Cleanup(app.Close)
	addr := app.Listener.Addr().String()
	provider, _ := url.Parse(srv.URL)
	jar, _ := cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List})
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	c := &http.Client{
		Jar:     jar,
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			// Every *.example.com host is the application; the provider is itself.
			DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
				if a != provider.Host {
					a = addr
				}
				return dialer.DialContext(ctx, network, a)
			},
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the test server's own certificate
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &ssoEnv{flowEnv: &flowEnv{idp: srv, p: p, app: app, base: "https://login.example.com:" + port, client: c}, port: port}
}

func (e *ssoEnv) url(host, path string) string { return "https://" + host + ":" + e.port + path }

// TestSingleSignOnAcrossSubdomains: signed in on a.example.com through the
// central callback host means signed in on b.example.com; a logout on
// b.example.com ends the session on a.example.com too, with the cookie
// store, the memory backend and Redis.
func TestSingleSignOnAcrossSubdomains(t *testing.T) {
	backends := map[string]func(t *testing.T) idp.SessionBackend{
		"cookie": func(*testing.T) idp.SessionBackend { return nil },
		"memory": func(*testing.T) idp.SessionBackend { return idp.NewMemoryBackend() },
		"redis":  redisBackend,
	}
	for name, backend := range backends {
		t.Run(name, func(t *testing.T) {
			e := newSSOEnv(t, backend(t))
			page := e.url("a.example.com", "/me?tab=1")
			resp := e.do(t, browserGet(page))
			login, _ := url.Parse(resp.Header.Get("Location"))
			if resp.StatusCode != http.StatusFound || login.Host != "login.example.com:"+e.port || login.Query().Get("return_to") != page {
				t.Fatalf("a.example.com without a session: %d to %q, want the login route on the callback host returning to %s", resp.StatusCode, login, page)
			}
			resp = e.do(t, browserGet(login.String()))
			auth, _ := url.Parse(resp.Header.Get("Location"))
			resp = e.do(t, browserGet(e.authorize(t, auth)))
			if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || got != page {
				t.Fatalf("callback: %d to %q, want %s", resp.StatusCode, got, page)
			}
			c := cookieNamed(resp, "__Secure-idp_session")
			if c == nil || c.Domain != "example.com" || !c.Secure || !c.HttpOnly || c.Path != "/" {
				t.Fatalf("session cookie %+v: want __Secure-idp_session, Domain=example.com, Secure, HttpOnly, Path=/", c)
			}
			for _, host := range []string{"a.example.com", "b.example.com"} {
				if resp := e.do(t, browserGet(e.url(host, "/me"))); resp.StatusCode != http.StatusOK || readBody(resp) != host+":"+e.port+" alice" {
					t.Fatalf("%s after the sign-in: %d %s", host, resp.StatusCode, readBody(resp))
				}
			}
			req, _ := http.NewRequest(http.MethodPost, e.url("b.example.com", "/auth/logout"), nil)
			req.Header.Set("Origin", e.url("b.example.com", ""))
			req.Header.Set("Sec-Fetch-Site", "same-origin")
			if resp := e.do(t, req); resp.StatusCode != http.StatusOK {
				t.Fatalf("logout on b.example.com: %d %s", resp.StatusCode, readBody(resp))
			}
			if resp := e.do(t, browserGet(e.url("a.example.com", "/me"))); resp.StatusCode != http.StatusFound {
				t.Fatalf("a.example.com after the logout on b.example.com: %d %s, want 302 to the login", resp.StatusCode, readBody(resp))
			}
		})
	}
}

// TestSiblingCrossOriginRequests: an unsafe request from a sibling
// subdomain carries the shared cookie on its own; it counts as a
// credential only from an app named by its exact host in
// allowed_redirect_hosts, never from a host a pattern allows nor from
// elsewhere.
func TestSiblingCrossOriginRequests(t *testing.T) {
	e := newSSOEnv(t, nil, "*.example.com:*")
	exact := newSSOEnv(t, nil, "*.example.com:*", "wiki.example.com")
	for _, env := range []*ssoEnv{e, exact} {
		resp := env.do(t, browserGet(env.url("a.example.com", "/me")))
		login, _ := url.Parse(resp.Header.Get("Location"))
		resp = env.do(t, browserGet(login.String()))
		auth, _ := url.Parse(resp.Header.Get("Location"))
		env.do(t, browserGet(env.authorize(t, auth)))
	}
	post := func(env *ssoEnv, origin, site string) int {
		req, _ := http.NewRequest(http.MethodPost, env.url("a.example.com", "/me"), nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Sec-Fetch-Site", site)
		return env.do(t, req).StatusCode
	}
	cases := []struct {
		env          *ssoEnv
		origin, site string
		want         int
	}{
		{e, e.url("a.example.com", ""), "same-origin", http.StatusOK},
		{e, e.url("b.example.com", ""), "same-site", http.StatusUnauthorized},
		{e, "https://wiki.example.com", "same-site", http.StatusUnauthorized},
		{e, "https://evil.test", "cross-site", http.StatusUnauthorized},
		{exact, "https://wiki.example.com", "same-site", http.StatusOK},
		{exact, "http://wiki.example.com", "same-site", http.StatusUnauthorized},
		{exact, "https://b.example.com", "same-site", http.StatusUnauthorized},
	}
	for _, c := range cases {
		if got := post(c.env, c.origin, c.site); got != c.want {
			t.Errorf("POST from %s (%s): %d, want %d", c.origin, c.site, got, c.want)
		}
	}
}

// TestCookieDomainRefused: a cookie domain needs an https callback on a
// host it covers, and no public suffix.
func TestCookieDomainRefused(t *testing.T) {
	base := idp.Config{IssuerURL: "https://issuer.example", ClientID: "c", IncludeRoutes: true,
		SessionSecret: []byte(sessionSecret), RedirectURI: "https://login.example.com/auth/callback"}
	for domain, want := range map[string]string{
		"example.org":  "does not cover the callback host",
		"com":          "public suffix",
		"co.uk":        "public suffix",
		"example..com": "empty label",
	} {
		c := base
		c.Session = &idp.SessionConfig{CookieDomain: domain}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("cookie domain %q: %v, want %q", domain, err, want)
		}
	}
	c := base
	c.RedirectURI = "http://login.example.com/auth/callback"
	c.Session = &idp.SessionConfig{CookieDomain: "example.com"}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "https") {
		t.Errorf("http callback with a cookie domain: %v", err)
	}
	for _, d := range []string{"example.com", ".example.com", "login.example.com"} {
		c := base
		c.Session = &idp.SessionConfig{CookieDomain: d}
		if err := c.Validate(); err != nil {
			t.Errorf("cookie domain %q refused: %v", d, err)
		}
	}
}

// redisBackend is a Redis session store under a fresh prefix, or a skip
// without TEST_REDIS_URL (a failure when IDP_REQUIRE_REDIS is set).
func redisBackend(t *testing.T) idp.SessionBackend {
	u := testneed.RedisURL(t, "the Redis variant")
	s, err := redisstore.Open(t.Context(), u, "idp-sso-test-"+time.Now().Format("150405.000000")+":")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
