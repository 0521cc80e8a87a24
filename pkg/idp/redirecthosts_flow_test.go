package idp_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// TestLoginReturnToAllowedHosts: with allowed_redirect_hosts, return_to
// and rd may name another app of the same sign-in by its absolute URL;
// the session's callback sends the browser there. The bypasses of the
// allowlist are refused with 400 before a login state is issued.
func TestLoginReturnToAllowedHosts(t *testing.T) {
	e := sessionEnv(t, nil, func(c *idp.Config) {
		c.AllowedRedirectHosts = []string{"wiki.example.com", "*.apps.example.com"}
	})
	for _, param := range []string{"return_to", "rd"} {
		target := "http://grafana.apps.example.com/d/home?orgId=1"
		resp := e.do(t, browserGet(e.base+"/auth/login?"+param+"="+url.QueryEscape(target)))
		if resp.StatusCode != http.StatusFound {
			t.Fatalf("%s %s: status %d: %s", param, target, resp.StatusCode, readBody(resp))
		}
		auth, _ := url.Parse(resp.Header.Get("Location"))
		resp = e.do(t, browserGet(e.authorize(t, auth)))
		if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || got != target {
			t.Fatalf("%s: callback answered %d to %q, want 302 to %q", param, resp.StatusCode, got, target)
		}
	}
	for _, v := range []string{
		"//evil.test", "/\\evil.test", "https:evil.test", "http://wiki.example.com@evil.test/",
		"http://wiki%2eexample.com/", "http://wiki.example.com./", "http://wiki..example.com/", "http://wiki.example.com:8080/",
		"http://x.apps.example.com.evil.test/", "http://wіki.example.com/", "http://wiki.example.com/%0d%0aSet-Cookie:x=1",
		"http://wiki.example.com\\@evil.test/", "javascript://wiki.example.com/%0aalert(1)", "ftp://wiki.example.com/",
		"http://apps.example.com/",
	} {
		resp := e.get(t, e.base+"/auth/login?rd="+url.QueryEscape(v))
		wantProblem(t, resp, http.StatusBadRequest, "allowed_redirect_hosts")
		for _, c := range resp.Cookies() {
			if c.Name == idp.LoginStateCookie {
				t.Errorf("rd %q: a login state was issued", v)
			}
		}
	}
}

// TestAllowedRedirectHostsHTTPSOnly: behind an https redirect URI, an
// http target on an allowed host is refused (no downgrade).
func TestAllowedRedirectHostsHTTPSOnly(t *testing.T) {
	srv := idptest.NewServer(t, idptest.Options{Clients: []idptest.Client{{ID: clientID, Secret: clientSecret}}})
	p := newPlugin(t, srv, func(c *idp.Config) {
		c.ClientSecret = clientSecret
		c.IncludeRoutes = true
		c.RedirectURI = "https://login.example.com/auth/callback"
		c.SessionSecret = []byte(sessionSecret)
		c.AllowedRedirectHosts = []string{"*.example.com"}
	})
	for target, want := range map[string]int{
		"https://wiki.example.com/": http.StatusFound,
		"http://wiki.example.com/":  http.StatusBadRequest,
	} {
		req, _ := http.NewRequest(http.MethodGet, "https://login.example.com/auth/login?rd="+url.QueryEscape(target), nil)
		rec := httptest.NewRecorder()
		p.Routes().ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("rd %s: %d, want %d", target, rec.Code, want)
		}
	}
}

// Several apps, one sign-in: a page of wiki.example.com sends a browser
// without a session to the login route on the central callback host,
// which brings it back to the page after the sign-in.
func ExamplePlugin_LoginURLFor() {
	provider, err := idptest.Start(idptest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer provider.Close()
	p, err := idp.New(context.Background(), idp.Config{
		ServerURL:            provider.URL,
		Realm:                "demo",
		ClientID:             "apps",
		IncludeRoutes:        true,
		RedirectURI:          "https://login.example.com/auth/callback",
		SessionSecret:        []byte("a session secret of 32 bytes or more"),
		AllowedRedirectHosts: []string{"*.example.com"},
		Session:              &idp.SessionConfig{CookieDomain: "example.com"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	for _, target := range []string{"https://wiki.example.com/page?x=1", "https://login.example.com/account", "https://evil.test/x"} {
		r := httptest.NewRequest(http.MethodGet, target, nil)
		fmt.Println(p.LoginURLFor(r))
	}
	// Output:
	// https://login.example.com/auth/login?return_to=https%3A%2F%2Fwiki.example.com%2Fpage%3Fx%3D1
	// /auth/login?return_to=%2Faccount
	// /auth/login?return_to=%2Fx
}
