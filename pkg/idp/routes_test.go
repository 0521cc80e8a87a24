package idp_test

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// TestLoginFlow runs the whole flow with a real client and cookie jar that
// follows redirects: login → provider → callback → token document → a
// protected handler → refresh → logout.
func TestLoginFlow(t *testing.T) {
	var logs syncBuffer
	e := newFlowEnv(t, idptest.Options{}, func(c *idp.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	browser := &http.Client{Jar: e.client.Jar, Timeout: 10 * time.Second}
	resp, err := browser.Get(e.base + "/auth/login?return_to=%2Freports%3Fyear%3D2026")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got := resp.Request.URL.Path; got != "/auth/callback" {
		t.Fatalf("flow ended at %s, want the callback", got)
	}
	doc := decodeDoc(t, resp)
	if doc.IDToken == "" {
		t.Fatal("no id_token")
	}
	if doc.ReturnTo != "/reports?year=2026" {
		t.Fatalf("return_to = %q", doc.ReturnTo)
	}
	if c := cookieNamed(resp, idp.LoginStateCookie); c == nil || c.MaxAge >= 0 {
		t.Fatalf("callback did not delete the login-state cookie: %v", c)
	}
	tp, err := e.p.Verify(verifyCtx(t), doc.AccessToken)
	if err != nil {
		t.Fatalf("access token does not verify: %v", err)
	}
	if tp.AuthorizedParty != clientID || tp.Subject != "user-alice" {
		t.Fatalf("unexpected claims: azp %q sub %q", tp.AuthorizedParty, tp.Subject)
	}

	me := func(tok string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, e.base+"/me", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		return e.do(t, req)
	}
	if r := me(doc.AccessToken); r.StatusCode != 200 || readBody(r) != "alice" {
		t.Fatalf("/me with the new token: %d %s", r.StatusCode, readBody(r))
	}

	// Refresh: new tokens, verified; the old refresh token is rotated out.
	r := e.post(t, "/auth/refresh", "application/json", `{"refresh_token":"`+doc.RefreshToken+`"}`)
	doc2 := decodeDoc(t, r)
	if doc2.AccessToken == doc.AccessToken || doc2.RefreshToken == doc.RefreshToken {
		t.Fatal("refresh returned the same tokens")
	}
	if r := me(doc2.AccessToken); r.StatusCode != 200 {
		t.Fatalf("/me with the refreshed token: %d", r.StatusCode)
	}
	r = e.post(t, "/auth/refresh", "application/json", `{"refresh_token":"`+doc.RefreshToken+`"}`)
	wantProblem(t, r, http.StatusUnauthorized, "refused the refresh token")

	// Logout ends the provider session: the refresh token stops working.
	if e.idp.Sessions() != 1 {
		t.Fatalf("provider sessions = %d, want 1", e.idp.Sessions())
	}
	r = e.post(t, "/auth/logout", "application/json", `{"refresh_token":"`+doc2.RefreshToken+`"}`)
	if r.StatusCode != 200 {
		t.Fatalf("logout: %d %s", r.StatusCode, readBody(r))
	}
	var out struct {
		LoggedOut      bool   `json:"logged_out"`
		ProviderLogout string `json:"provider_logout"`
	}
	if err := json.NewDecoder(r.Body).Decode(&out); err != nil || !out.LoggedOut || out.ProviderLogout != "done" {
		t.Fatalf("logout answer %+v, %v", out, err)
	}
	if e.idp.Sessions() != 0 {
		t.Fatalf("provider sessions after logout = %d, want 0", e.idp.Sessions())
	}
	r = e.post(t, "/auth/refresh", "application/json", `{"refresh_token":"`+doc2.RefreshToken+`"}`)
	wantProblem(t, r, http.StatusUnauthorized, "refused")

	// Never a token in the logs.
	for _, secret := range []string{doc.AccessToken, doc.RefreshToken, doc.IDToken, doc2.AccessToken, doc2.RefreshToken, clientSecret} {
		if strings.Contains(logs.String(), secret) {
			t.Fatal("a token or secret was logged")
		}
	}
}

// TestLoginFlowOpaqueRefresh: the flow works with opaque refresh tokens.
func TestLoginFlowOpaqueRefresh(t *testing.T) {
	e := newFlowEnv(t, idptest.Options{OpaqueRefreshTokens: true}, nil)
	doc := decodeDoc(t, e.get(t, e.loginToCallback(t)))
	if strings.Count(doc.RefreshToken, ".") == 2 {
		t.Fatal("refresh token is a JWT, want opaque")
	}
	decodeDoc(t, e.post(t, "/auth/refresh", "application/json", `{"refresh_token":"`+doc.RefreshToken+`"}`))
}

// TestLoginFlowCookie: with TokenLocationCookie the callback also sets the
// access-token cookie, which then authenticates; logout deletes it.
func TestLoginFlowCookie(t *testing.T) {
	e := newFlowEnv(t, idptest.Options{TTL: 2 * time.Minute}, func(c *idp.Config) {
		c.TokenLocation = idp.TokenLocationCookie
	})
	resp := e.get(t, e.loginToCallback(t))
	doc := decodeDoc(t, resp)
	c := cookieNamed(resp, idp.DefaultCookieName)
	if c == nil || c.Value != doc.AccessToken || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure {
		t.Fatalf("access-token cookie = %+v", c)
	}
	if c.MaxAge < 100 || c.MaxAge > 120 {
		t.Fatalf("cookie Max-Age = %d, want expires_in (120)", c.MaxAge)
	}
	if r := e.get(t, e.base+"/me"); r.StatusCode != 200 || readBody(r) != "alice" {
		t.Fatalf("/me with the cookie: %d %s", r.StatusCode, readBody(r))
	}
	r := e.post(t, "/auth/logout", "", "")
	if r.StatusCode != 200 || !strings.Contains(readBody(r), `"skipped"`) {
		t.Fatalf("logout: %d %s", r.StatusCode, readBody(r))
	}
	if c := cookieNamed(r, idp.DefaultCookieName); c == nil || c.MaxAge >= 0 {
		t.Fatalf("logout did not delete the access-token cookie: %+v", c)
	}
	if r := e.get(t, e.base+"/me"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/me after logout: %d", r.StatusCode)
	}
}

// TestLoginRedirect checks the authorization request and the state cookie.
func TestLoginRedirect(t *testing.T) {
	e := newFlowEnv(t, idptest.Options{}, nil)
	req, _ := http.NewRequest(http.MethodGet, e.base+"/auth/login", nil)
	req.Host = "evil.example" // never used for the redirect_uri
	req.Header.Set("X-Forwarded-Host", "evil.example")
	req.Header.Set("X-Forwarded-Proto", "https")
	resp := e.do(t, req)
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("login: %d, Cache-Control %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
	u, _ := url.Parse(resp.Header.Get("Location"))
	if got := u.Scheme + "://" + u.Host + u.Path; got != e.idp.Issuer+"/protocol/openid-connect/auth" {
		t.Fatalf("redirected to %s", got)
	}
	q := u.Query()
	for k, want := range map[string]string{
		"response_type": "code", "client_id": clientID, "redirect_uri": e.base + "/auth/callback",
		"code_challenge_method": "S256",
	} {
		if q.Get(k) != want {
			t.Errorf("%s = %q, want %q", k, q.Get(k), want)
		}
	}
	if !strings.Contains(" "+q.Get("scope")+" ", " openid ") {
		t.Errorf("scope %q lacks openid", q.Get("scope"))
	}
	if len(q.Get("state")) < 32 || len(q.Get("nonce")) < 32 || len(q.Get("code_challenge")) != 43 {
		t.Errorf("weak or missing state/nonce/challenge: %v", q)
	}
	c := cookieNamed(resp, idp.LoginStateCookie)
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/auth" || c.Secure ||
		c.MaxAge != int(idp.LoginStateTTL/time.Second) {
		t.Fatalf("state cookie = %+v", c)
	}
	if strings.Contains(c.Value, q.Get("state")) || strings.Contains(c.Value, q.Get("nonce")) {
		t.Fatal("the state cookie shows the state or nonce in clear")
	}
	u2 := e.startLogin(t, "")
	if u2.Query().Get("state") == q.Get("state") || u2.Query().Get("nonce") == q.Get("nonce") {
		t.Fatal("state or nonce reused across logins")
	}
}

// TestStateCookieSecure: Secure when the request came over TLS or the
// redirect URI is https.
func TestStateCookieSecure(t *testing.T) {
	srv := idptest.NewServer(t)
	for _, tc := range []struct {
		name     string
		redirect string
		tls      bool
	}{
		{"tls request", "http://app.example/auth/callback", true},
		{"https redirect uri", "https://app.example/auth/callback", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(t, srv, func(c *idp.Config) {
				c.IncludeRoutes, c.RedirectURI, c.SessionSecret = true, tc.redirect, []byte(sessionSecret)
			})
			req := httptest.NewRequest(http.MethodGet, "/auth/login", nil)
			if tc.tls {
				req.TLS = &tls.ConnectionState{}
			}
			rec := httptest.NewRecorder()
			p.Routes().ServeHTTP(rec, req)
			c := cookieNamed(rec.Result(), idp.LoginStateCookie)
			if rec.Code != http.StatusFound || c == nil || !c.Secure {
				t.Fatalf("status %d, cookie %+v: want Secure", rec.Code, c)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writers (slog handlers
// called from server goroutines).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
