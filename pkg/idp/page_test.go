package idp_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/internal/problem"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// navigation are the headers of a browser following a link.
var navigation = []string{"Accept", "text/html,application/xhtml+xml,*/*;q=0.8", "Sec-Fetch-Mode", "navigate"}

// wantPage checks that rec is the HTML refusal page of status, holding
// every part.
func wantPage(t *testing.T, status int, hdr http.Header, body string, parts ...string) {
	t.Helper()
	if ct := hdr.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Fatalf("content type %q, want text/html: %s", ct, body)
	}
	if !strings.Contains(body, "<!doctype html>") || !strings.Contains(body, "HTTP "+strconv.Itoa(status)) {
		t.Fatalf("not a page:\n%s", body)
	}
	if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "style-src 'sha256-") {
		t.Errorf("CSP %q", csp)
	}
	for _, p := range parts {
		if !strings.Contains(body, p) {
			t.Errorf("the %d page lacks %q:\n%s", status, p, body)
		}
	}
}

// wantPageResp checks that resp is the refusal page of status, its
// detail containing part.
func wantPageResp(t *testing.T, resp *http.Response, status int, part string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, readBody(resp))
	}
	wantPage(t, status, resp.Header, readBody(resp), part)
}

// wantProblemRec checks that rec is the problem+json refusal of status.
func wantProblemRec(t *testing.T, rec *httptest.ResponseRecorder, status int, detail string) {
	t.Helper()
	if rec.Code != status || rec.Header().Get("Content-Type") != problem.ContentType {
		t.Fatalf("%d %q, want %d problem+json: %s", rec.Code, rec.Header().Get("Content-Type"), status, rec.Body)
	}
	var d problem.Details
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil || !strings.Contains(d.Detail, detail) {
		t.Fatalf("detail %q (%v), want %q", d.Detail, err, detail)
	}
}

// Every refusal of the middleware and guards is an HTML page for a
// navigation and problem+json for a program, with the same status,
// WWW-Authenticate and Retry-After.
func TestRefusalPages(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, func(c *idp.Config) {
		c.ClientSecret = clientSecret
		c.IncludeRoutes = true
		c.RedirectURI = "http://app.example/auth/callback"
		c.SessionSecret = []byte(sessionSecret)
	})
	h := p.Middleware(p.Require(idp.RequireRoles(idp.MatchAll, "admin"))(&okHandler{}))
	alice := srv.Mint(map[string]any{"azp": clientID, "preferred_username": "alice",
		"realm_access": map[string]any{"roles": []string{"creator"}}})
	down := idptest.NewServer(t)
	down.SetDown(true)
	cold, err := idp.New(t.Context(), idp.Config{ServerURL: down.URL, Realm: down.Realm, ClientID: clientID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cold.Close() })
	for _, c := range []struct {
		name   string
		h      http.Handler
		hdr    []string
		status int
		detail string
		page   []string
	}{
		{"no token", h, nil, 401, "a bearer token is required",
			[]string{"Sign-in required", `href="/auth/login?return_to=%2Fadmin%3Fx%3D1"`, "Sign in again"}},
		{"invalid token", h, []string{"Authorization", "Bearer x.y.z"}, 401, "malformed token",
			[]string{"Sign-in required", "malformed token", "Sign in again"}},
		{"two tokens", h, []string{"Authorization", "Bearer a", "Authorization", "Bearer b"}, 400, "more than one token",
			[]string{"Bad request"}},
		{"forbidden", h, []string{"Authorization", "Bearer " + alice}, 403, "lacks a required role",
			[]string{"Access denied", "Signed in as <strong>alice</strong>", `id="detail">the token lacks a required role`, `href="/"`}},
		// A token of the cold plugin's own issuer: one of another issuer is
		// refused (401) before any key is needed.
		{"keys unavailable", cold.Middleware(&okHandler{}), []string{"Authorization", "Bearer " + down.Mint(map[string]any{"azp": clientID})}, 503, "not available",
			[]string{"Temporarily unavailable", `href="/admin?x=1">Try again`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			api := do(t, c.h, "GET", "/admin?x=1", append([]string{"Accept", "application/json"}, c.hdr...)...)
			wantProblemRec(t, api, c.status, c.detail)
			nav := do(t, c.h, "GET", "/admin?x=1", append(append([]string{}, navigation...), c.hdr...)...)
			if nav.Code != c.status {
				t.Fatalf("navigation: %d, want %d", nav.Code, c.status)
			}
			wantPage(t, c.status, nav.Header(), nav.Body.String(), append(c.page, c.detail)...)
			for _, k := range []string{"WWW-Authenticate", "Retry-After"} {
				if nav.Header().Get(k) != api.Header().Get(k) {
					t.Errorf("%s: page %q, problem %q", k, nav.Header().Get(k), api.Header().Get(k))
				}
			}
			if strings.Contains(nav.Body.String(), alice) {
				t.Error("the page shows the token")
			}
		})
	}
}

// The /auth routes' refusals (callback errors) are the sign-in's error
// page for a navigation, problem+json for a program.
func TestCallbackErrorPages(t *testing.T) {
	e := newFlowEnv(t, idptest.Options{}, nil)
	for _, c := range []struct {
		name   string
		query  map[string]string
		status int
		detail string
	}{
		{"state mismatch", map[string]string{"state": "forged"}, 400, "state mismatch"},
		{"code refused", map[string]string{"code": "forged"}, 401, "refused the authorization code"},
		{"provider refused", map[string]string{"code": "", "error": "access_denied"}, 401, "refused the login: access_denied"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cb := withQuery(t, e.loginToCallback(t), c.query)
			wantProblem(t, e.get(t, cb), c.status, c.detail)
			cb = withQuery(t, e.loginToCallback(t), c.query)
			req, _ := http.NewRequest("GET", cb, nil)
			for i := 0; i < len(navigation); i += 2 {
				req.Header.Set(navigation[i], navigation[i+1])
			}
			resp := e.do(t, req)
			if resp.StatusCode != c.status {
				t.Fatalf("navigation: %d, want %d", resp.StatusCode, c.status)
			}
			if got := cookieNamed(resp, idp.LoginStateCookie); got == nil || got.MaxAge >= 0 {
				t.Error("the page does not delete the login state cookie")
			}
			wantPage(t, c.status, resp.Header, readBody(resp), "Sign-in failed", c.detail,
				`href="/auth/login?return_to=%2F">Sign in again`)
		})
	}
}

// A provider that refuses the client itself (a wrong client secret) is
// the proxy's misconfiguration, not the user's failed sign-in: 502, an
// ERROR log with the provider's code, a page that says so.
func TestCallbackInvalidClient(t *testing.T) {
	var logs syncBuffer
	e := newFlowEnv(t, idptest.Options{}, func(c *idp.Config) {
		c.ClientSecret = "not-the-secret"
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	wantProblem(t, e.get(t, e.loginToCallback(t)), http.StatusBadGateway, "the proxy is misconfigured: the identity provider refused its client credentials (invalid_client)")
	if l := logs.String(); !strings.Contains(l, `"level":"ERROR"`) || !strings.Contains(l, `"error":"invalid_client"`) {
		t.Errorf("not logged at ERROR with the provider's code:\n%s", l)
	}
	req, _ := http.NewRequest("GET", e.loginToCallback(t), nil)
	for i := 0; i < len(navigation); i += 2 {
		req.Header.Set(navigation[i], navigation[i+1])
	}
	resp := e.do(t, req)
	body := readBody(resp)
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("navigation: %d", resp.StatusCode)
	}
	wantPage(t, 502, resp.Header, body, "Sign-in is misconfigured", "tell the site&#39;s operator", "(invalid_client)")
	if strings.Contains(body, "Sign in again") {
		t.Error("the page offers a sign-in that cannot work")
	}
}
