package idp_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// TestSessionBoundToDeployment: two deployments with the same
// session_secret that differ in their cookie domain, issuer or client
// refuse each other's session cookies (401; a browser is sent to sign in
// again) and login states (400), even where the other's tokens would
// verify; a replica of the same deployment accepts them. With the cookie
// store, and with one session backend shared by both.
func TestSessionBoundToDeployment(t *testing.T) {
	for name, shared := range map[string]idp.SessionBackend{"cookie": nil, "shared memory backend": idp.NewMemoryBackend()} {
		t.Run(name, func(t *testing.T) {
			a := newSSOEnv(t, shared)
			resp := a.do(t, browserGet(a.url("a.example.com", "/auth/login?return_to=/me")))
			stateA := cookieNamed(resp, idp.LoginStateCookie)
			auth, _ := url.Parse(resp.Header.Get("Location"))
			callback := a.authorize(t, auth)
			if resp := a.do(t, browserGet(callback)); resp.StatusCode != http.StatusFound {
				t.Fatalf("sign-in: %d %s", resp.StatusCode, readBody(resp))
			}
			var session []string
			for _, c := range a.client.Jar.Cookies(&url.URL{Scheme: "https", Host: "a.example.com"}) {
				if strings.Contains(c.Name, "idp_session") {
					session = append(session, c.Name+"="+c.Value)
				}
			}
			if len(session) == 0 {
				t.Fatal("no session cookie after the sign-in")
			}
			other := idptest.NewServer(t, idptest.Options{Clients: []idptest.Client{{ID: clientID, Secret: clientSecret}}})
			for _, c := range []struct {
				name   string
				srv    *idptest.Server
				mutate func(*idp.Config)
				want   int
			}{
				{"a replica", a.idp, nil, http.StatusOK},
				{"another cookie domain", a.idp, func(c *idp.Config) {
					c.RedirectURI = "https://login.other.test/auth/callback"
					c.AllowedRedirectHosts = []string{"*.other.test"}
					c.Session.CookieDomain = "other.test"
				}, http.StatusUnauthorized},
				{"another client", a.idp, func(c *idp.Config) {
					c.ClientID = "other-client"
					c.OptionalAudiences = []string{clientID} // a's tokens verify here
				}, http.StatusUnauthorized},
				{"another issuer", other, func(c *idp.Config) {
					// a's provider trusted for bearer tokens: a's tokens verify here.
					c.Issuers = []idp.TrustedIssuer{{Name: "a", IssuerURL: a.idp.Issuer, Audiences: []string{clientID}}}
				}, http.StatusUnauthorized},
			} {
				t.Run(c.name, func(t *testing.T) {
					b := newPlugin(t, c.srv, func(cfg *idp.Config) {
						cfg.ClientSecret = clientSecret
						cfg.IncludeRoutes = true
						cfg.RedirectURI = "https://login.example.com:" + a.port + "/auth/callback"
						cfg.SessionSecret = []byte(sessionSecret) // the same secret
						cfg.AllowedRedirectHosts = []string{"*.example.com:*"}
						cfg.Session = &idp.SessionConfig{Backend: shared, CookieDomain: "example.com"}
						if c.mutate != nil {
							c.mutate(cfg)
						}
					})
					mux := http.NewServeMux()
					mux.Handle("/auth/", b.Routes())
					mux.Handle("GET /me", b.WithUser(func(w http.ResponseWriter, r *http.Request, u *idp.User) {
						_, _ = io.WriteString(w, u.PreferredUsername)
					}))
					srv := httptest.NewServer(mux)
					t.Cleanup(srv.Close)
					req, _ := http.NewRequest(http.MethodGet, srv.URL+"/me", nil)
					req.Header.Set("Cookie", strings.Join(session, "; "))
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != c.want {
						t.Fatalf("the session cookie of the example.com deployment: %d %s, want %d", resp.StatusCode, body, c.want)
					}
					if c.want == http.StatusOK {
						return
					}
					// A browser with that cookie is sent to sign in here.
					req, _ = http.NewRequest(http.MethodGet, srv.URL+"/me", nil)
					req.Header.Set("Cookie", strings.Join(session, "; "))
					asBrowser(req)
					noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
					if resp, err := noFollow.Do(req); err != nil || resp.StatusCode != http.StatusFound || !strings.Contains(resp.Header.Get("Location"), "/auth/login") {
						t.Fatalf("a browser with the other deployment's cookie: %v %v, want 302 to the login", resp, err)
					}
					// The login state of the other deployment opens nowhere
					// else either.
					cb, _ := url.Parse(callback)
					req, _ = http.NewRequest(http.MethodGet, srv.URL+"/auth/callback?"+cb.RawQuery, nil)
					req.Header.Set("Cookie", idp.LoginStateCookie+"="+stateA.Value)
					resp, err = http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					wantProblem(t, resp, http.StatusBadRequest, "login state cookie is invalid")
				})
			}
		})
	}
}
