package idp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// stateCookieOf returns the login-state cookie the jar holds for the app.
func (e *flowEnv) stateCookieOf(t *testing.T) *http.Cookie {
	t.Helper()
	u, _ := url.Parse(e.base + "/auth/callback")
	for _, c := range e.client.Jar.Cookies(u) {
		if c.Name == idp.LoginStateCookie {
			return c
		}
	}
	t.Fatal("no login-state cookie in the jar")
	return nil
}

// callbackWith visits callback URL u sending exactly the given cookie (or
// none), bypassing the jar.
func (e *flowEnv) callbackWith(t *testing.T, u string, c *http.Cookie) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if c != nil {
		req.AddCookie(c)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readBody(resp)
	resp.Body.Close()
	return resp
}

func withQuery(t *testing.T, u string, set map[string]string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	q := p.Query()
	for k, v := range set {
		if v == "" {
			q.Del(k)
		} else {
			q.Set(k, v)
		}
	}
	p.RawQuery = q.Encode()
	return p.String()
}

// TestCallbackStateRejections: every bad state or cookie is 400 and the
// provider's token endpoint is not called.
func TestCallbackStateRejections(t *testing.T) {
	e := newFlowEnv(t, idptest.Options{}, nil)
	other := newFlowEnv(t, idptest.Options{}, func(c *idp.Config) {
		c.SessionSecret = []byte("a different session secret, 32+ bytes")
	})
	otherCookie := func(t *testing.T) *http.Cookie {
		other.startLogin(t, "")
		return other.stateCookieOf(t)
	}
	tamper := func(c *http.Cookie) *http.Cookie {
		b := []byte(c.Value)
		i := len(b) / 2
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return &http.Cookie{Name: c.Name, Value: string(b)}
	}
	cases := []struct {
		name   string
		mutate func(t *testing.T, cb string, c *http.Cookie) (string, *http.Cookie)
		detail string
	}{
		{"missing cookie", func(t *testing.T, cb string, c *http.Cookie) (string, *http.Cookie) { return cb, nil }, "missing"},
		{"state mismatch", func(t *testing.T, cb string, c *http.Cookie) (string, *http.Cookie) {
			return withQuery(t, cb, map[string]string{"state": "not-the-state"}), c
		}, "state mismatch"},
		{"state missing", func(t *testing.T, cb string, c *http.Cookie) (string, *http.Cookie) {
			return withQuery(t, cb, map[string]string{"state": ""}), c
		}, "state mismatch"},
		{"state twice", func(t *testing.T, cb string, c *http.Cookie) (string, *http.Cookie) {
			s, _ := url.Parse(cb)
			return cb + "&state=" + url.QueryEscape(s.Query().Get("state")), c
		}, "state mismatch"},
		{"tampered cookie", func(t *testing.T, cb string, c *http.Cookie) (string, *http.Cookie) { return cb, tamper(c) }, "invalid"},
		{"truncated cookie", func(t *testing.T, cb string, c *http.Cookie) (string, *http.Cookie) {
			return cb, &http.Cookie{Name: c.Name, Value: c.Value[:len(c.Value)-10]}
		}, "invalid"},
		{"cookie of another secret", func(t *testing.T, cb string, c *http.Cookie) (string, *http.Cookie) {
			return cb, otherCookie(t)
		}, "invalid"},
		{"iss of another provider", func(t *testing.T, cb string, c *http.Cookie) (string, *http.Cookie) {
			return withQuery(t, cb, map[string]string{"iss": "https://evil.example/realms/demo"}), c
		}, "another identity provider"},
		{"garbage cookie", func(t *testing.T, cb string, c *http.Cookie) (string, *http.Cookie) {
			return cb, &http.Cookie{Name: c.Name, Value: "x"}
		}, "invalid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cb := e.loginToCallback(t)
			u, c := tc.mutate(t, cb, e.stateCookieOf(t))
			before := e.idp.TokenRequests()
			resp := e.callbackWith(t, u, c)
			wantProblem(t, resp, http.StatusBadRequest, tc.detail)
			if n := e.idp.TokenRequests() - before; n != 0 {
				t.Fatalf("the provider's token endpoint was called %d times", n)
			}
			if c := cookieNamed(resp, idp.LoginStateCookie); c == nil || c.MaxAge >= 0 {
				t.Fatal("the login-state cookie was not deleted")
			}
		})
	}
}

// TestCallbackReplay: a callback replayed with a kept copy of the state
// cookie is 400 without calling the provider.
func TestCallbackReplay(t *testing.T) {
	e := newFlowEnv(t, idptest.Options{}, nil)
	cb := e.loginToCallback(t)
	kept := e.stateCookieOf(t)
	if resp := e.callbackWith(t, cb, kept); resp.StatusCode != http.StatusOK {
		t.Fatalf("first callback: %d %s", resp.StatusCode, readBody(resp))
	}
	before := e.idp.TokenRequests()
	wantProblem(t, e.callbackWith(t, cb, kept), http.StatusBadRequest, "already been completed")
	if e.idp.TokenRequests() != before {
		t.Fatal("the replay reached the provider")
	}
}

// TestCallbackExpired: a login state older than LoginStateTTL is refused.
func TestCallbackExpired(t *testing.T) {
	var skew atomic.Int64
	e := newFlowEnv(t, idptest.Options{}, func(c *idp.Config) {
		c.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	})
	cb := e.loginToCallback(t)
	c := e.stateCookieOf(t)
	skew.Store(int64(idp.LoginStateTTL + time.Second))
	before := e.idp.TokenRequests()
	wantProblem(t, e.callbackWith(t, cb, c), http.StatusBadRequest, "expired")
	if e.idp.TokenRequests() != before {
		t.Fatal("an expired login reached the provider")
	}
}

// TestCallbackProviderError: an error= answer of the provider is a 4xx
// with the reason; access_denied is 401.
func TestCallbackProviderError(t *testing.T) {
	for _, tc := range []struct {
		code   string
		status int
		detail string
	}{
		{"access_denied", http.StatusUnauthorized, "access_denied"},
		{"login_required", http.StatusUnauthorized, "login_required"},
		{"temporarily_unavailable", http.StatusBadRequest, "temporarily_unavailable"},
		{"<script>", http.StatusBadRequest, "refused the login: error"},
	} {
		t.Run(tc.code, func(t *testing.T) {
			e := newFlowEnv(t, idptest.Options{LoginError: tc.code}, nil)
			cb := e.loginToCallback(t)
			if !strings.Contains(cb, "error=") || strings.Contains(cb, "code=") {
				t.Fatalf("provider answered %s", cb)
			}
			wantProblem(t, e.get(t, cb), tc.status, tc.detail)
			if e.idp.TokenRequests() != 0 {
				t.Fatal("the token endpoint was called after a refused login")
			}
		})
	}
}

// TestCallbackTokenRejections: ID tokens and access tokens the callback
// must refuse, issued by a provider that is otherwise well-behaved.
func TestCallbackTokenRejections(t *testing.T) {
	cases := []struct {
		name   string
		hook   idptest.ClaimsHook
		status int
		detail string
	}{
		{"wrong nonce", idHook(func(c map[string]any) { c["nonce"] = "another-nonce" }), 401, "ID token is invalid"},
		{"nonce missing", idHook(func(c map[string]any) { delete(c, "nonce") }), 401, "ID token is invalid"},
		{"at_hash mismatch", idHook(func(c map[string]any) { c["at_hash"] = "AAAAAAAAAAAAAAAAAAAAAA" }), 401, "ID token is invalid"},
		{"wrong aud", idHook(func(c map[string]any) { c["aud"] = "another-client" }), 401, "ID token is invalid"},
		{"several aud without azp", idHook(func(c map[string]any) {
			c["aud"] = []any{clientID, "another-client"}
			delete(c, "azp")
		}), 401, "ID token is invalid"},
		{"azp of another client", idHook(func(c map[string]any) { c["azp"] = "another-client" }), 401, "ID token is invalid"},
		{"wrong issuer", idHook(func(c map[string]any) { c["iss"] = "https://evil.example/realms/demo" }), 401, "ID token is invalid"},
		{"expired", idHook(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Minute).Unix() }), 401, "ID token is invalid"},
		{"sub missing", idHook(func(c map[string]any) { c["sub"] = nil }), 401, "ID token is invalid"},
		{"iat missing", idHook(func(c map[string]any) { c["iat"] = nil }), 401, "ID token is invalid"},
		{"iat in the future", idHook(func(c map[string]any) { c["iat"] = time.Now().Add(time.Hour).Unix() }), 401, "ID token is invalid"},
		{"typ not ID", idHook(func(c map[string]any) { c["typ"] = "Bearer" }), 401, "ID token is invalid"},
		// Claim names are exact and exp, iat and nbf are numbers, in ID
		// tokens as in access tokens (go-oidc alone would read "EXP" as exp
		// and accept "exp":"123").
		{"expired exp beside a future EXP", idHook(func(c map[string]any) {
			c["EXP"] = c["exp"]
			c["exp"] = time.Now().Add(-time.Hour).Unix()
		}), 401, "ID token is invalid"},
		{"EXP only", idHook(func(c map[string]any) { c["EXP"], c["exp"] = c["exp"], nil }), 401, "ID token is invalid"},
		{"Sub folded", idHook(func(c map[string]any) { c["ſub"], c["sub"] = c["sub"], nil }), 401, "ID token is invalid"},
		{"exp as a string", idHook(func(c map[string]any) { c["exp"] = fmt.Sprint(time.Now().Add(time.Hour).Unix()) }), 401, "ID token is invalid"},
		{"iat as a string", idHook(func(c map[string]any) { c["iat"] = fmt.Sprint(time.Now().Unix()) }), 401, "ID token is invalid"},
		{"access token for another service", func(typ string, c map[string]any) {
			if typ == "Bearer" {
				c["azp"], c["aud"] = "another-client", "another-client"
			}
		}, 502, "does not accept"},
	}
	e := newFlowEnv(t, idptest.Options{}, nil)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.idp.SetClaimsHook(tc.hook)
			defer e.idp.SetClaimsHook(nil)
			wantProblem(t, e.get(t, e.loginToCallback(t)), tc.status, tc.detail)
		})
	}
	t.Run("several aud with azp passes", func(t *testing.T) {
		e.idp.SetClaimsHook(idHook(func(c map[string]any) { c["aud"] = []any{clientID, "another-client"} }))
		defer e.idp.SetClaimsHook(nil)
		decodeDoc(t, e.get(t, e.loginToCallback(t)))
	})
}

func idHook(f func(map[string]any)) idptest.ClaimsHook {
	return func(typ string, c map[string]any) {
		if typ == "ID" {
			f(c)
		}
	}
}

// TestCallbackBadCode: a code the provider refuses is 401; no code is 400.
func TestCallbackBadCode(t *testing.T) {
	e := newFlowEnv(t, idptest.Options{}, nil)
	cb := e.loginToCallback(t)
	wantProblem(t, e.get(t, withQuery(t, cb, map[string]string{"code": "forged"})), http.StatusUnauthorized, "refused the authorization code")
	cb = e.loginToCallback(t)
	wantProblem(t, e.get(t, withQuery(t, cb, map[string]string{"code": ""})), http.StatusBadRequest, "code is missing")
}

// TestLoginReturnTo: open-redirect payloads are refused before anything
// else happens; safe paths are accepted.
func TestLoginReturnTo(t *testing.T) {
	e := newFlowEnv(t, idptest.Options{}, nil)
	bad := []string{
		"//evil.example", "///evil.example", "/\\evil.example", "\\/evil.example", "https://evil.example",
		"http:evil.example", "javascript:alert(1)", "data:text/html,x", "/%2F%2Fevil.example", "/%2f%2fevil.example",
		"/%5Cevil.example", "/%5cevil.example", "/%252F%252Fevil.example", "/%09/evil.example", "/\t/evil.example",
		"/a\r\nLocation: https://evil.example", "/%0d%0aLocation:x", "/.//evil.example", "/../..//evil.example",
		"evil.example", "", "/%E0%A4%A", "/" + strings.Repeat("a", 4096),
	}
	for _, v := range bad {
		resp := e.get(t, e.base+"/auth/login?return_to="+url.QueryEscape(v))
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("return_to %q: status %d, want 400", v, resp.StatusCode)
			continue
		}
		wantProblem(t, resp, http.StatusBadRequest, "return_to")
		if cookieNamed(resp, idp.LoginStateCookie) != nil {
			t.Errorf("return_to %q: a login state was issued", v)
		}
	}
	resp := e.get(t, e.base+"/auth/login?return_to=/a&return_to=/b")
	wantProblem(t, resp, http.StatusBadRequest, "more than once")
	resp = e.get(t, e.base+"/auth/login?return_to=/a&rd=/b")
	wantProblem(t, resp, http.StatusBadRequest, "more than once")
	// An absolute URL on another origin, or with user info, is refused
	// like any open redirect; on the site's own origin (as an ingress's
	// sign-in redirect sends it) it stands for its path and query.
	for _, v := range []string{e.base + "@evil.example/", "http://user@" + strings.TrimPrefix(e.base, "http://") + "/x",
		strings.Replace(e.base, "http://", "https://", 1) + "/x", e.base + "//evil.example", e.base + "/%2F%2Fevil.example"} {
		if resp := e.get(t, e.base+"/auth/login?rd="+url.QueryEscape(v)); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("rd %q: status %d, want 400", v, resp.StatusCode)
		}
	}
	for q, want := range map[string]string{
		"?return_to=" + url.QueryEscape("/reports?year=2026&q=a%2Fb"): "/reports?year=2026&q=a%2Fb",
		"?rd=" + url.QueryEscape("/reports"):                          "/reports",
		"?rd=" + url.QueryEscape(e.base+"/page?x=1&y=2"):              "/page?x=1&y=2",
		"?return_to=" + url.QueryEscape(e.base):                       "/",
		"?return_to=/":                                                "/",
		"?return_to=" + url.QueryEscape("/a/b#top"):                   "/a/b#top",
	} {
		u := e.startLogin(t, q)
		doc := decodeDoc(t, e.get(t, e.authorize(t, u)))
		if doc.ReturnTo != want {
			t.Errorf("%s came back as %q, want %q", q, doc.ReturnTo, want)
		}
	}
}

// TestPOSTRejections: content type, body, cross-site and method checks of
// refresh and logout.
func TestPOSTRejections(t *testing.T) {
	e := newFlowEnv(t, idptest.Options{}, nil)
	const js = "application/json"
	cases := []struct {
		name, path, ct, body string
		hdr                  []string
		status               int
		detail               string
	}{
		{"refresh foreign origin", "/auth/refresh", js, `{"refresh_token":"x"}`, []string{"Origin", "https://evil.example"}, 403, "cross-site"},
		{"logout foreign origin", "/auth/logout", js, `{}`, []string{"Origin", "https://evil.example"}, 403, "cross-site"},
		{"logout null origin", "/auth/logout", js, `{}`, []string{"Origin", "null"}, 403, "cross-site"},
		{"refresh cross-site fetch", "/auth/refresh", js, `{"refresh_token":"x"}`, []string{"Sec-Fetch-Site", "cross-site"}, 403, "cross-site"},
		{"logout same-site fetch", "/auth/logout", js, `{}`, []string{"Sec-Fetch-Site", "same-site", "Origin", "https://sub.evil.example"}, 403, "cross-site"},
		{"refresh text/plain", "/auth/refresh", "text/plain", `{"refresh_token":"x"}`, nil, 415, "application/json"},
		{"refresh form", "/auth/refresh", "application/x-www-form-urlencoded", `refresh_token=x`, nil, 415, "application/json"},
		{"refresh no content type", "/auth/refresh", "", `{"refresh_token":"x"}`, nil, 415, "application/json"},
		{"logout text/plain", "/auth/logout", "text/plain", `{"refresh_token":"x"}`, nil, 415, "application/json"},
		{"refresh bad JSON", "/auth/refresh", js, `{"refresh_token":`, nil, 400, "JSON"},
		{"refresh not an object", "/auth/refresh", js, `["x"]`, nil, 400, "JSON"},
		{"refresh wrong type", "/auth/refresh", js, `{"refresh_token":5}`, nil, 400, "JSON"},
		{"refresh two values", "/auth/refresh", js, `{"refresh_token":"x"} {}`, nil, 400, "more than one"},
		{"refresh missing field", "/auth/refresh", js, `{}`, nil, 400, "refresh_token is required"},
		{"refresh empty field", "/auth/refresh", js, `{"refresh_token":""}`, nil, 400, "refresh_token is required"},
		{"refresh null", "/auth/refresh", js, `null`, nil, 400, "refresh_token is required"},
		{"refresh empty body", "/auth/refresh", js, ``, nil, 400, "body is required"},
		{"refresh control chars", "/auth/refresh", js, `{"refresh_token":"a\nb"}`, nil, 400, "malformed"},
		{"logout bad JSON", "/auth/logout", js, `{`, nil, 400, "JSON"},
		{"logout wrong type", "/auth/logout", js, `{"refresh_token":true}`, nil, 400, "JSON"},
		{"refresh too large", "/auth/refresh", js, `{"refresh_token":"` + strings.Repeat("a", 70<<10) + `"}`, nil, 413, "larger"},
		{"refresh unknown token", "/auth/refresh", js, `{"refresh_token":"unknown"}`, nil, 401, "refused"},
		{"refresh charset param ok", "/auth/refresh", "application/json; charset=utf-8", `{"refresh_token":"unknown"}`, []string{"Origin", e.base, "Sec-Fetch-Site", "same-origin"}, 401, "refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.idp.TokenRequests()
			resp := e.post(t, tc.path, tc.ct, tc.body, tc.hdr...)
			wantProblem(t, resp, tc.status, tc.detail)
			if tc.status != 401 && e.idp.TokenRequests() != before {
				t.Fatal("a rejected request reached the provider")
			}
		})
	}
}

// TestRoutesMethodsAndPaths: 405 with Allow, 404 for other paths.
func TestRoutesMethodsAndPaths(t *testing.T) {
	e := newFlowEnv(t, idptest.Options{}, nil)
	for _, tc := range []struct{ method, path, allow string }{
		{"POST", "/auth/login", "GET"}, {"PUT", "/auth/callback", "GET"},
		{"GET", "/auth/logout", "POST"}, {"GET", "/auth/refresh", "POST"}, {"DELETE", "/auth/refresh", "POST"},
	} {
		req, _ := http.NewRequest(tc.method, e.base+tc.path, nil)
		resp := e.do(t, req)
		if resp.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, resp.Header.Get("Allow"), tc.allow)
		}
		wantProblem(t, resp, http.StatusMethodNotAllowed, "method not allowed")
	}
	wantProblem(t, e.get(t, e.base+"/auth/nope"), http.StatusNotFound, "no such")
	wantProblem(t, e.get(t, e.base+"/auth/login/"), http.StatusNotFound, "no such")
}

// TestRoutesDisabled: without IncludeRoutes every path is 404.
func TestRoutesDisabled(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, nil)
	rec := httptest.NewRecorder()
	p.Routes().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/auth/login", nil))
	wantProblem(t, rec.Result(), http.StatusNotFound, "not enabled")
}

// TestRoutesProviderDown: before discovery succeeds, login is 503 with
// Retry-After; logout still clears the local session.
func TestRoutesProviderDown(t *testing.T) {
	srv := idptest.NewServer(t)
	srv.SetDown(true)
	p, err := idp.New(t.Context(), idp.Config{
		ServerURL: srv.URL, Realm: srv.Realm, ClientID: clientID, IncludeRoutes: true,
		RedirectURI: "http://app.example/auth/callback", SessionSecret: []byte(sessionSecret),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rec := httptest.NewRecorder()
	p.Routes().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/auth/login", nil))
	if rec.Header().Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	wantProblem(t, rec.Result(), http.StatusServiceUnavailable, "not available")

	req := httptest.NewRequest(http.MethodPost, "/auth/logout", strings.NewReader(`{"refresh_token":"rt"}`))
	req.Header.Set("Content-Type", "application/json")
	rec = httptest.NewRecorder()
	p.Routes().ServeHTTP(rec, req)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"failed"`) {
		t.Fatalf("logout with the provider down: %d %s", rec.Code, rec.Body)
	}
}
