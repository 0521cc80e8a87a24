package idp_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// TestLoginStartedOnAppHost: a sign-in started at the login route of an
// app's host (a.example.com), with the callback on the central host
// login.example.com, completes: the login state is the session cookie
// domain's (the callback reads it), a relative return_to (or none) comes
// back to the app's host, an absolute one goes to any allowed host, with
// the cookie store and a session backend.
func TestLoginStartedOnAppHost(t *testing.T) {
	for name, backend := range map[string]func() idp.SessionBackend{
		"cookie": func() idp.SessionBackend { return nil },
		"memory": func() idp.SessionBackend { return idp.NewMemoryBackend() },
	} {
		t.Run(name, func(t *testing.T) {
			e := newSSOEnv(t, backend())
			for _, c := range []struct{ query, want string }{
				{"?return_to=" + url.QueryEscape("/landing?x=1"), e.url("a.example.com", "/landing?x=1")},
				{"?rd=" + url.QueryEscape("/landing"), e.url("a.example.com", "/landing")},
				{"", e.url("a.example.com", "/")},
				{"?return_to=" + url.QueryEscape(e.url("b.example.com", "/page?y=2")), e.url("b.example.com", "/page?y=2")},
				// The callback host's own page, named by its absolute URL.
				{"?return_to=" + url.QueryEscape(e.url("login.example.com", "/account")), "/account"},
			} {
				resp := e.do(t, browserGet(e.url("a.example.com", "/auth/login"+c.query)))
				if resp.StatusCode != http.StatusFound {
					t.Fatalf("login on a.example.com%s: %d %s", c.query, resp.StatusCode, readBody(resp))
				}
				st := cookieNamed(resp, idp.LoginStateCookie)
				if st == nil || st.Domain != "example.com" || !st.Secure || !st.HttpOnly {
					t.Fatalf("login on a.example.com%s: state cookie %+v, want one for Domain=example.com", c.query, st)
				}
				auth, _ := url.Parse(resp.Header.Get("Location"))
				cb := e.authorize(t, auth)
				if u, _ := url.Parse(cb); u.Host != "login.example.com:"+e.port {
					t.Fatalf("callback at %s, want the central host", cb)
				}
				resp = e.do(t, browserGet(cb))
				if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || got != c.want {
					t.Fatalf("callback of a login on a.example.com%s: %d to %q, want 302 to %q: %s", c.query, resp.StatusCode, got, c.want, readBody(resp))
				}
				if resp := e.do(t, browserGet(e.url("a.example.com", "/me"))); resp.StatusCode != http.StatusOK {
					t.Fatalf("a.example.com after the sign-in: %d", resp.StatusCode)
				}
			}
			// An unsafe relative target is refused on an app host as on any
			// (the browser gets the sign-in's error page).
			resp := e.do(t, browserGet(e.url("a.example.com", "/auth/login?return_to="+url.QueryEscape("//evil.test/"))))
			wantPageResp(t, resp, http.StatusBadRequest, "return_to")
		})
	}
}

// TestLoginStartedOnAppHostWithoutCookieDomain: without a session cookie
// domain the callback host cannot read a login state set on an app's
// host, so the login route there sends the browser to the login route of
// the callback host, to come back to the app's page.
func TestLoginStartedOnAppHostWithoutCookieDomain(t *testing.T) {
	e := newSSOEnvWith(t, nil, func(c *idp.Config) { c.Session = &idp.SessionConfig{} })
	for query, want := range map[string]string{
		"?return_to=" + url.QueryEscape("/landing"): e.url("a.example.com", "/landing"),
		"": e.url("a.example.com", "/"),
		"?return_to=" + url.QueryEscape(e.url("b.example.com", "/page")): e.url("b.example.com", "/page"),
	} {
		resp := e.do(t, browserGet(e.url("a.example.com", "/auth/login"+query)))
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != http.StatusFound || loc.Host != "login.example.com:"+e.port || loc.Path != "/auth/login" || loc.Query().Get("return_to") != want {
			t.Fatalf("login on a.example.com%s: %d to %q, want the callback host's login returning to %s", query, resp.StatusCode, loc, want)
		}
		if c := cookieNamed(resp, idp.LoginStateCookie); c != nil {
			t.Fatalf("a login state the callback cannot read was set on a.example.com: %+v", c)
		}
		resp = e.do(t, browserGet(loc.String()))
		auth, _ := url.Parse(resp.Header.Get("Location"))
		resp = e.do(t, browserGet(e.authorize(t, auth)))
		if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || got != want {
			t.Fatalf("callback: %d to %q, want %q", resp.StatusCode, got, want)
		}
	}
}

// TestLoginURLForUnsafePageOnAppHost: a protected page of an app's host
// whose URL is no safe return-to target still signs in through the
// central callback, to come back to that host's root, not the callback
// host's.
func TestLoginURLForUnsafePageOnAppHost(t *testing.T) {
	e := newSSOEnv(t, nil)
	r := httptest.NewRequest(http.MethodGet, e.url("a.example.com", "/x/%2e%2e/y"), nil)
	want := e.url("login.example.com", "/auth/login?return_to="+url.QueryEscape(e.url("a.example.com", "/")))
	if got := e.p.LoginURLFor(r); got != want {
		t.Fatalf("LoginURLFor(%s) = %q, want %q", r.URL, got, want)
	}
}
