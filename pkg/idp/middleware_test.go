package idp_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/internal/problem"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

func TestMiddlewareErrorsAreProblemJSON(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, nil)
	upstream := &okHandler{}
	h := p.Middleware(upstream)
	expired := srv.Mint(map[string]any{"aud": clientID, "exp": 1000, "iat": 900})
	tests := []struct {
		name      string
		hdr       []string
		status    int
		challenge string
	}{
		{"no token", nil, 401, `Bearer realm="demo"`},
		{"bare token", []string{"Authorization", expired}, 401, `Bearer realm="demo"`},
		{"expired", []string{"Authorization", "Bearer " + expired}, 401, `Bearer realm="demo", error="invalid_token", error_description="token expired"`},
		{"garbage", []string{"Authorization", "Bearer x.y.z"}, 401, `Bearer realm="demo", error="invalid_token", error_description="malformed token"`},
		{"two headers", []string{"Authorization", "Bearer a", "Authorization", "Bearer b"}, 400, `Bearer realm="demo", error="invalid_request"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := do(t, h, "GET", "/private", tt.hdr...)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d", rec.Code, tt.status)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != tt.challenge {
				t.Fatalf("WWW-Authenticate %q, want %q", got, tt.challenge)
			}
			if ct := rec.Header().Get("Content-Type"); ct != problem.ContentType {
				t.Fatalf("content type %q", ct)
			}
			var d problem.Details
			if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil || d.Status != tt.status || d.Detail == "" {
				t.Fatalf("body %s (%v)", rec.Body, err)
			}
			if strings.Contains(rec.Body.String(), expired[:20]) {
				t.Fatal("the body echoes the token")
			}
		})
	}
	if upstream.calls != 0 {
		t.Fatalf("rejected requests reached the handler %d times", upstream.calls)
	}
}

// A token verified before skips the syntax check (the hot table compares
// the whole token); its near variants must still be checked and refused.
func TestVerifiedTokenVariantsStillChecked(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, nil)
	h := p.Middleware(&okHandler{})
	tok := srv.Mint(srv.UserClaims(clientID, "alice", "creator"))
	for range 2 { // the second is a hit in the hot table
		if rec := do(t, h, "GET", "/x", "Authorization", "Bearer "+tok); rec.Code != 200 {
			t.Fatalf("valid token: status %d", rec.Code)
		}
	}
	for name, v := range map[string]string{
		"trailing space":    "Bearer " + tok + " ",
		"trailing NUL":      "Bearer " + tok + "\x00",
		"trailing garbage":  "Bearer " + tok + "!",
		"padding then more": "Bearer " + tok + "=a",
		"cut short":         "Bearer " + tok[:len(tok)-1],
	} {
		rec := do(t, h, "GET", "/x", "Authorization", v)
		if rec.Code != 401 || !strings.Contains(rec.Header().Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Errorf("%s: status %d, WWW-Authenticate %q; want 401 invalid_token", name, rec.Code, rec.Header().Get("WWW-Authenticate"))
		}
	}
}

func TestExcludedPathsExactMatch(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, func(c *idp.Config) { c.ExcludedPaths = []string{"/health", "/public/"} })
	h := p.Middleware(&okHandler{})
	for path, want := range map[string]int{
		"/health": 200, "/health/": 401, "/healthz": 401, "/HEALTH": 401,
		"/public/": 200, "/public/x": 401, "/": 401,
	} {
		if rec := do(t, h, "GET", path); rec.Code != want {
			t.Errorf("%s: status %d, want %d", path, rec.Code, want)
		}
	}
}

func TestIdentityInContextAndAdapters(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, nil)
	tok := srv.Mint(srv.UserClaims(clientID, "alice", "creator"))

	var seenUser *idp.User
	var seenRaw string
	var seenPayload *idp.TokenPayload
	mux := http.NewServeMux()
	mux.Handle("/user", p.WithUser(func(w http.ResponseWriter, r *http.Request, u *idp.User) { seenUser = u }))
	mux.Handle("/raw", p.WithRawToken(func(w http.ResponseWriter, r *http.Request, raw string) { seenRaw = raw }))
	mux.Handle("/payload", p.WithPayload(func(w http.ResponseWriter, r *http.Request, tp *idp.TokenPayload) { seenPayload = tp }))
	mux.HandleFunc("/ctx", func(w http.ResponseWriter, r *http.Request) {
		u, ok1 := idp.UserFrom(r.Context())
		_, ok2 := idp.PayloadFrom(r.Context())
		raw, ok3 := idp.RawTokenFrom(r.Context())
		if !ok1 || !ok2 || !ok3 || u.PreferredUsername != "alice" || raw != tok {
			w.WriteHeader(500)
		}
	})

	// Adapters protect the handler on their own, without Middleware.
	for _, path := range []string{"/user", "/raw", "/payload"} {
		if rec := do(t, mux, "GET", path); rec.Code != 401 {
			t.Fatalf("%s without token: %d, want 401", path, rec.Code)
		}
		if rec := do(t, mux, "GET", path, "Authorization", "Bearer "+tok); rec.Code != 200 {
			t.Fatalf("%s with token: %d", path, rec.Code)
		}
	}
	if seenUser == nil || seenUser.PreferredUsername != "alice" || !seenUser.HasRealmRole("creator") || seenUser.Email != "alice@example.com" {
		t.Fatalf("user = %+v", seenUser)
	}
	if seenRaw != tok || seenPayload == nil || seenPayload.Subject != "user-alice" {
		t.Fatalf("raw/payload not passed: %q %+v", seenRaw, seenPayload)
	}
	if rec := do(t, p.Middleware(mux), "GET", "/ctx", "Authorization", "Bearer "+tok); rec.Code != 200 {
		t.Fatalf("context accessors: %d", rec.Code)
	}
	if _, ok := idp.UserFrom(httptest.NewRequest("GET", "/", nil).Context()); ok {
		t.Fatal("UserFrom found a user in an unauthenticated context")
	}
}
