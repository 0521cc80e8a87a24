package idp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

func browserGet(u string) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, u, nil)
	return asBrowser(r)
}
func asBrowser(r *http.Request) *http.Request {
	r.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
	r.Header.Set("Sec-Fetch-Mode", "navigate")
	return r
}

// sessionEnv is a flowEnv in session mode.
func sessionEnv(t testing.TB, backend idp.SessionBackend, mutate func(*idp.Config)) *flowEnv {
	t.Helper()
	return sessionEnvWith(t, idptest.Options{}, backend, mutate)
}

func sessionEnvWith(t testing.TB, opts idptest.Options, backend idp.SessionBackend, mutate func(*idp.Config)) *flowEnv {
	t.Helper()
	return newFlowEnv(t, opts, func(c *idp.Config) {
		c.Session = &idp.SessionConfig{Backend: backend}
		if mutate != nil {
			mutate(c)
		}
	})
}

// signIn walks a browser through login and back to path; it returns the
// final redirect target.
func (e *flowEnv) signIn(t testing.TB, path string) string {
	t.Helper()
	resp := e.do(t, browserGet(e.base+path))
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("GET %s without a session: %d, want 302 to login", path, resp.StatusCode)
	}
	login, _ := url.Parse(resp.Header.Get("Location"))
	if login.Path != "/auth/login" || login.Query().Get("return_to") != path {
		t.Fatalf("redirected to %s, want /auth/login?return_to=%s", login, path)
	}
	resp = e.do(t, browserGet(e.base+login.String()))
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	auth, _ := url.Parse(resp.Header.Get("Location"))
	cb := e.authorize(t, auth)
	resp = e.do(t, browserGet(cb))
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("callback in session mode: %d %s, want 302", resp.StatusCode, readBody(resp))
	}
	return resp.Header.Get("Location")
}

func (e *flowEnv) me(t *testing.T, browser bool) *http.Response {
	t.Helper()
	r, _ := http.NewRequest(http.MethodGet, e.base+"/me", nil)
	if browser {
		asBrowser(r)
	} else {
		r.Header.Set("Accept", "application/json")
	}
	return e.do(t, r)
}

func stores() map[string]func() idp.SessionBackend {
	return map[string]func() idp.SessionBackend{
		"cookie": func() idp.SessionBackend { return nil },
		"memory": idp.NewMemoryBackend,
	}
}

// A browser is sent to the login, comes back to the page it asked for,
// and its session carries it; API calls without credentials get 401; a
// bearer token still works next to sessions.
func TestSessionSignIn(t *testing.T) {
	for name, backend := range stores() {
		t.Run(name, func(t *testing.T) {
			e := sessionEnv(t, backend(), nil)
			if resp := e.me(t, false); resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("API call without credentials: %d, want 401", resp.StatusCode)
			}
			if back := e.signIn(t, "/me"); back != "/me" {
				t.Fatalf("callback redirected to %q, want /me", back)
			}
			for range 3 {
				if resp := e.me(t, true); resp.StatusCode != 200 || readBody(resp) != "alice" {
					t.Fatalf("with the session: %d %s", resp.StatusCode, readBody(resp))
				}
			}
			u, _ := url.Parse(e.base)
			var names []string
			for _, c := range e.client.Jar.Cookies(u) {
				names = append(names, c.Name)
				if strings.Contains(c.Value, ".") && strings.Count(c.Value, ".") == 2 {
					t.Errorf("cookie %s looks like a raw JWT", c.Name)
				}
			}
			if !strings.Contains(strings.Join(names, ","), idp.DefaultSessionCookie) {
				t.Fatalf("no session cookie in %v", names)
			}
			// A bearer token still works, without the session.
			r, _ := http.NewRequest(http.MethodGet, e.base+"/me", nil)
			r.Header.Set("Authorization", "Bearer "+e.idp.Mint(e.idp.UserClaims(clientID, "svc")))
			if resp, err := http.DefaultClient.Do(r); err != nil || resp.StatusCode != 200 {
				t.Fatalf("bearer next to sessions: %v %v", resp, err)
			}
		})
	}
}

// The access token is refreshed before it expires, once per session even
// under concurrent requests; a refused refresh ends the session.
func TestSessionRefresh(t *testing.T) {
	for name, backend := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// Tokens live 10 min and are refreshed within 4 min of their
			// expiry: 6.5 min on, the next requests need a refresh.
			clk := new(testClock)
			e := clockedSessionEnv(t, clk, 10*time.Minute, 4*time.Minute, backend(), nil)
			e.signIn(t, "/me")
			before := e.idp.TokenRequests()
			clk.Advance(6*time.Minute + 30*time.Second)
			var wg sync.WaitGroup
			var ok atomic.Int32
			for range 8 {
				wg.Go(func() {
					if resp := e.me(t, false); resp.StatusCode == 200 {
						ok.Add(1)
					} else {
						t.Logf("during the refresh: %d %s", resp.StatusCode, readBody(resp))
					}
				})
			}
			wg.Wait()
			if ok.Load() != 8 {
				t.Fatalf("%d of 8 concurrent requests served during the refresh", ok.Load())
			}
			if n := e.idp.TokenRequests() - before; n != 1 {
				t.Fatalf("%d refreshes for one session under 8 concurrent requests, want 1", n)
			}
			// The provider ends the session: the next refresh is refused
			// and the session is over (API: 401; browser: login).
			e.idp.EndSessions()
			clk.Advance(6*time.Minute + 30*time.Second)
			if resp := e.me(t, false); resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("after a refused refresh: %d, want 401", resp.StatusCode)
			}
			if resp := e.me(t, true); resp.StatusCode != http.StatusFound {
				t.Fatalf("browser after the session ended: %d, want 302 to login", resp.StatusCode)
			}
		})
	}
}

// Logout ends the session locally and at the provider and sends the
// browser through the end-session endpoint with id_token_hint.
func TestSessionLogout(t *testing.T) {
	for name, backend := range stores() {
		t.Run(name, func(t *testing.T) {
			e := sessionEnv(t, backend(), func(c *idp.Config) {
				c.Session.PostLogoutRedirectURI = "http://app.example/bye"
			})
			e.signIn(t, "/me")
			u, _ := url.Parse(e.base)
			saved := e.client.Jar.Cookies(u) // a copy of the cookies, taken before logout
			cross, _ := http.NewRequest(http.MethodGet, e.base+"/auth/logout", nil)
			cross.Header.Set("Sec-Fetch-Site", "cross-site")
			if resp := e.do(t, asBrowser(cross)); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("cross-site logout: %d, want 403", resp.StatusCode)
			}
			resp := e.do(t, browserGet(e.base+"/auth/logout"))
			if resp.StatusCode != http.StatusFound {
				t.Fatalf("logout: %d %s", resp.StatusCode, readBody(resp))
			}
			end, _ := url.Parse(resp.Header.Get("Location"))
			if !strings.HasSuffix(end.Path, "/protocol/openid-connect/logout") || end.Query().Get("id_token_hint") == "" ||
				end.Query().Get("post_logout_redirect_uri") != "http://app.example/bye" {
				t.Fatalf("logout redirect %s: want the end-session endpoint with id_token_hint and post_logout_redirect_uri", end)
			}
			if e.idp.Sessions() != 0 {
				t.Fatalf("the provider still has %d sessions", e.idp.Sessions())
			}
			if resp := e.me(t, false); resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("after logout: %d", resp.StatusCode)
			}
			// A copy of the cookie taken before the logout is worthless too.
			r, _ := http.NewRequest(http.MethodGet, e.base+"/me", nil)
			for _, c := range saved {
				r.AddCookie(c)
			}
			if resp, err := http.DefaultClient.Do(r); err != nil || resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("old cookie after logout: %v %v, want 401", resp.StatusCode, err)
			}
		})
	}
}

// A tampered, foreign or garbage session cookie is no session: 401 (or
// login for a browser), the cookie cleared, never a 500.
func TestSessionCookieTampering(t *testing.T) {
	e := sessionEnv(t, nil, nil)
	e.signIn(t, "/me")
	u, _ := url.Parse(e.base)
	var value string
	for _, c := range e.client.Jar.Cookies(u) {
		if c.Name == idp.DefaultSessionCookie {
			value = c.Value
		}
	}
	other := sessionEnv(t, nil, func(c *idp.Config) { c.SessionSecret = []byte(strings.Repeat("another secret ", 3)) })
	flip := []byte(value)
	flip[len(flip)/2] ^= 1
	for what, v := range map[string]string{
		"flipped bit": string(flip), "truncated": value[:len(value)/2], "garbage": "x", "empty-ish": "==",
		"huge": strings.Repeat("A", 20000),
	} {
		for _, target := range []*flowEnv{e, other} {
			r, _ := http.NewRequest(http.MethodGet, target.base+"/me", nil)
			r.AddCookie(&http.Cookie{Name: idp.DefaultSessionCookie, Value: v})
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusBadRequest {
				t.Errorf("%s cookie: %d, want 401", what, resp.StatusCode)
			}
		}
	}
	// The genuine cookie on the app of another secret: no session there.
	r, _ := http.NewRequest(http.MethodGet, other.base+"/me", nil)
	r.AddCookie(&http.Cookie{Name: idp.DefaultSessionCookie, Value: value})
	if resp, _ := http.DefaultClient.Do(r); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("foreign cookie: %d, want 401", resp.StatusCode)
	}
	// A cross-origin unsafe request carries the cookie but no credential.
	req, _ := http.NewRequest(http.MethodPost, e.base+"/auth/refresh", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if resp := e.do(t, req); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site POST: %d", resp.StatusCode)
	}
}

// Tokens too large for one cookie are split into chunks; the session key
// rotates with the previous secret still accepted.
func TestSessionChunksAndKeyRotation(t *testing.T) {
	big := strings.Repeat("x", 1200)
	old := []byte(sessionSecret)
	e := sessionEnv(t, nil, nil)
	e.idp.SetClaimsHook(func(typ string, c map[string]any) { c["padding"] = big })
	e.signIn(t, "/me")
	u, _ := url.Parse(e.base)
	chunks := 0
	for _, c := range e.client.Jar.Cookies(u) {
		if strings.HasPrefix(c.Name, idp.DefaultSessionCookie) {
			chunks++
		}
	}
	if chunks < 2 {
		t.Fatalf("%d session cookie(s) for ~6 KB of tokens, want chunks", chunks)
	}
	if resp := e.me(t, false); resp.StatusCode != 200 {
		t.Fatalf("chunked session: %d", resp.StatusCode)
	}
	// The same cookies, judged by a plugin with a new secret and the old
	// one as previous: accepted; without the old one: no session.
	r, _ := http.NewRequest(http.MethodGet, e.base+"/me", nil)
	for _, c := range e.client.Jar.Cookies(u) {
		r.AddCookie(c)
	}
	same := newPlugin(t, e.idp, func(c *idp.Config) {
		c.ClientSecret = clientSecret
		c.IncludeRoutes = true
		c.RedirectURI = e.base + "/auth/callback"
		c.SessionSecret = []byte(strings.Repeat("the new secret ", 3))
		c.Session = &idp.SessionConfig{PreviousSecrets: [][]byte{old}}
	})
	if v := same.Authorize(r); !v.Allowed() {
		t.Fatalf("cookie sealed with the previous secret: %v", v.Err)
	}
	none := newPlugin(t, e.idp, func(c *idp.Config) {
		c.ClientSecret = clientSecret
		c.IncludeRoutes = true
		c.RedirectURI = e.base + "/auth/callback"
		c.SessionSecret = []byte(strings.Repeat("the new secret ", 3))
		c.Session = &idp.SessionConfig{}
	})
	if v := none.Authorize(r); v.Allowed() || !errors.Is(v.Err, idp.ErrNoToken) {
		t.Fatalf("cookie of a retired secret: %+v", v)
	}
}

// failingBackend fails every call, as a Redis that is down.
type failingBackend struct{}

var errDown = errors.New("connection refused")

func (failingBackend) Get(context.Context, string) ([]byte, error) { return nil, errDown }
func (failingBackend) Set(context.Context, string, []byte, time.Duration) error {
	return errDown
}
func (failingBackend) SetNX(context.Context, string, []byte, time.Duration) (bool, error) {
	return false, errDown
}
func (failingBackend) Delete(context.Context, ...string) error { return errDown }
func (failingBackend) AddToSet(context.Context, string, string, time.Duration) error {
	return errDown
}
func (failingBackend) SetMembers(context.Context, string) ([]string, error) { return nil, errDown }

// With the session store down, requests that need a session get 503 and
// logins are not lost silently: never an allow.
func TestSessionBackendDown(t *testing.T) {
	e := sessionEnv(t, failingBackend{}, nil)
	resp := e.do(t, browserGet(e.base+"/auth/login?return_to=/me"))
	auth, _ := url.Parse(resp.Header.Get("Location"))
	cb := e.authorize(t, auth)
	// The callback needs the store first (its state is single-use across
	// replicas): the 503 names the store, not the provider.
	if resp := e.do(t, browserGet(cb)); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("callback with the store down: %d, want 503", resp.StatusCode)
	} else if body := readBody(resp); !strings.Contains(body, "session store is unavailable") || strings.Contains(body, "identity provider") {
		t.Fatalf("callback with the store down: %s, want the session store named", body)
	}
	r, _ := http.NewRequest(http.MethodGet, e.base+"/me", nil)
	r.AddCookie(&http.Cookie{Name: idp.DefaultSessionCookie, Value: strings.Repeat("A", 52)})
	if resp := e.do(t, r); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("request with a session, store down: %d, want 503", resp.StatusCode)
	}
}

// A provider whose tokens live no longer than the refresh margin (40 s
// tokens, the 1 m default margin) does not get a refresh on every request:
// the margin is at most half the token's lifetime.
func TestSessionMarginBoundedByLifetime(t *testing.T) {
	clk := new(testClock)
	e := clockedSessionEnv(t, clk, 40*time.Second, 0, nil, nil)
	e.signIn(t, "/me")
	before := e.idp.TokenRequests()
	for range 4 {
		if resp := e.me(t, false); resp.StatusCode != 200 {
			t.Fatalf("with the session: %d", resp.StatusCode)
		}
	}
	if n := e.idp.TokenRequests() - before; n != 0 {
		t.Fatalf("%d refreshes of a fresh 40 s token, want none", n)
	}
	clk.Advance(21 * time.Second) // past half its lifetime
	if resp := e.me(t, false); resp.StatusCode != 200 {
		t.Fatalf("after half the lifetime: %d", resp.StatusCode)
	}
	if n := e.idp.TokenRequests() - before; n != 1 {
		t.Fatalf("%d refreshes past half the lifetime, want 1", n)
	}
}

// In session mode, POST logout with a refresh token in the body and no
// session still revokes it, as in the API mode.
func TestSessionLogoutBodyToken(t *testing.T) {
	e := sessionEnv(t, nil, nil)
	// A refresh token of the client, from a code flow driven directly
	// against the provider (the session mode never hands one out).
	conf := &oauth2.Config{ClientID: clientID, ClientSecret: clientSecret, RedirectURL: "http://127.0.0.1:1/cb",
		Endpoint: oauth2.Endpoint{AuthURL: e.idp.Issuer + "/protocol/openid-connect/auth", TokenURL: e.idp.TokenURL(),
			AuthStyle: oauth2.AuthStyleInParams}, Scopes: []string{"openid"}}
	verifier := oauth2.GenerateVerifier()
	auth, _ := url.Parse(conf.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier)))
	cb, _ := url.Parse(e.authorize(t, auth))
	tok, err := conf.Exchange(t.Context(), cb.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil || tok.RefreshToken == "" {
		t.Fatalf("code flow: %v", err)
	}
	before := e.idp.Sessions()
	resp := e.post(t, "/auth/logout", "application/json", `{"refresh_token":"`+tok.RefreshToken+`"}`)
	if body := readBody(resp); resp.StatusCode != 200 || !strings.Contains(body, `"provider_logout":"done"`) {
		t.Fatalf("logout with a body token in session mode: %d %s", resp.StatusCode, body)
	}
	if e.idp.Sessions() != before-1 {
		t.Fatalf("provider sessions %d → %d: the body's token was not used", before, e.idp.Sessions())
	}
}

// A request that read its session before another request's refresh of it
// finished takes that refresh's result: it does not redeem the refresh
// token again, which a provider that rotates refresh tokens (as idptest
// and Keycloak's "revoke refresh token" do) refuses, ending the session.
func TestSessionRefreshLateReader(t *testing.T) {
	for name, backend := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clk := new(testClock)
			e := clockedSessionEnv(t, clk, 10*time.Minute, 4*time.Minute, backend(), nil)
			e.signIn(t, "/me")
			before := e.idp.TokenRequests()
			clk.Advance(6*time.Minute + 30*time.Second) // the next requests refresh

			lateRead, firstDone := make(chan struct{}), make(chan struct{})
			var calls atomic.Int32
			idp.SetBeforeRefresh(e.p, func() {
				if calls.Add(1) == 1 { // the late reader: wait for the other's refresh
					close(lateRead)
					<-firstDone
				}
			})
			late := make(chan *http.Response, 1)
			go func() { late <- e.me(t, false) }()
			<-lateRead
			if resp := e.me(t, false); resp.StatusCode != 200 {
				t.Fatalf("the refreshing request: %d %s", resp.StatusCode, readBody(resp))
			}
			close(firstDone)
			if resp := <-late; resp.StatusCode != 200 {
				t.Fatalf("the request that read the session before the refresh: %d %s", resp.StatusCode, readBody(resp))
			}
			if n := e.idp.TokenRequests() - before; n != 1 {
				t.Errorf("%d refreshes, want 1", n)
			}
			if resp := e.me(t, false); resp.StatusCode != 200 {
				t.Fatalf("after both: %d %s (the session ended)", resp.StatusCode, readBody(resp))
			}
		})
	}
}

// The same across replicas sharing a session backend: a replica that read
// the session before another replica's refresh finished takes the stored
// result once it holds the refresh lock, instead of redeeming the
// rotated-out refresh token (which ended the session for everyone).
func TestSessionRefreshLateReaderOtherReplica(t *testing.T) {
	clk := new(testClock)
	e := clockedSessionEnv(t, clk, 10*time.Minute, 4*time.Minute, idp.NewMemoryBackend(), nil)
	replica, err := idp.New(t.Context(), e.p.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = replica.Close() })
	e.signIn(t, "/me")
	before := e.idp.TokenRequests()
	clk.Advance(6*time.Minute + 30*time.Second) // the next requests refresh

	lateRead, firstDone := make(chan struct{}), make(chan struct{})
	idp.SetBeforeRefresh(replica, func() {
		close(lateRead)
		<-firstDone
	})
	u, _ := url.Parse(e.base)
	r := httptest.NewRequest(http.MethodGet, e.base+"/me", nil)
	r.Header.Set("Accept", "application/json")
	for _, c := range e.client.Jar.Cookies(u) {
		r.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	served := make(chan struct{})
	go func() {
		defer close(served)
		replica.WithUser(func(w http.ResponseWriter, _ *http.Request, u *idp.User) {
			_, _ = io.WriteString(w, u.PreferredUsername)
		}).ServeHTTP(rec, r)
	}()
	<-lateRead
	if resp := e.me(t, false); resp.StatusCode != 200 {
		t.Fatalf("the refreshing replica: %d %s", resp.StatusCode, readBody(resp))
	}
	close(firstDone)
	<-served
	if rec.Code != 200 {
		t.Fatalf("the replica that read the session before the refresh: %d %s", rec.Code, rec.Body)
	}
	if n := e.idp.TokenRequests() - before; n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
	if resp := e.me(t, false); resp.StatusCode != 200 {
		t.Fatalf("after both: %d %s (the session ended)", resp.StatusCode, readBody(resp))
	}
}
