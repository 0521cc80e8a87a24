package idp_test

import (
	"net/http"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

func TestGuardMatrix(t *testing.T) {
	u := &idp.User{
		RealmRoles:  []string{"creator", "viewer"},
		ClientRoles: map[string][]string{"shortener": {"editor"}, "account": {"view-profile"}},
		Scopes:      []string{"openid", "email"},
	}
	tests := []struct {
		name  string
		guard idp.Guard
		want  bool
	}{
		{"roles all: held", idp.RequireRoles(idp.MatchAll, "creator", "viewer"), true},
		{"roles all: one missing", idp.RequireRoles(idp.MatchAll, "creator", "admin"), false},
		{"roles any: one held", idp.RequireRoles(idp.MatchAny, "admin", "viewer"), true},
		{"roles any: none held", idp.RequireRoles(idp.MatchAny, "admin", "root"), false},
		{"roles: exact match only", idp.RequireRoles(idp.MatchAny, "Creator", "creator ", "creat"), false},
		{"client roles all", idp.RequireClientRoles("shortener", idp.MatchAll, "editor"), true},
		{"client roles of another client", idp.RequireClientRoles("account", idp.MatchAll, "editor"), false},
		{"client roles unknown client", idp.RequireClientRoles("nope", idp.MatchAny, "editor"), false},
		{"scopes all", idp.RequireScopes(idp.MatchAll, "openid", "email"), true},
		{"scopes all missing", idp.RequireScopes(idp.MatchAll, "openid", "admin"), false},
		{"scopes any", idp.RequireScopes(idp.MatchAny, "admin", "email"), true},
		{"default strategy is ALL", idp.RequireRoles(0, "creator", "admin"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.guard.Allow(u); got != tt.want {
				t.Fatalf("Allow = %v, want %v (%v)", got, tt.want, tt.guard)
			}
		})
	}
	if idp.RequireRoles(idp.MatchAny, "x").Allow(nil) {
		t.Fatal("a nil user passed a guard")
	}
}

func TestGuardConstructorsPanicOnMisuse(t *testing.T) {
	for name, f := range map[string]func(){
		"no roles":       func() { idp.RequireRoles(idp.MatchAll) },
		"empty role":     func() { idp.RequireRoles(idp.MatchAll, "") },
		"no client":      func() { idp.RequireClientRoles("", idp.MatchAll, "x") },
		"bad strategy":   func() { idp.RequireScopes(idp.MatchStrategy(7), "x") },
		"no scopes":      func() { idp.RequireScopes(idp.MatchAny) },
		"no client role": func() { idp.RequireClientRoles("c", idp.MatchAny) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			f()
		})
	}
}

// Malformed claim shapes never match a guard and never fail the token.
func TestGuardsWithMalformedClaims(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, nil)
	h := p.Require(
		idp.RequireRoles(idp.MatchAny, "creator"),
	)(&okHandler{})
	hc := p.Require(idp.RequireClientRoles(clientID, idp.MatchAny, "editor"))(&okHandler{})
	hs := p.Require(idp.RequireScopes(idp.MatchAny, "write"))(&okHandler{})
	shapes := []map[string]any{
		{"realm_access": "creator"},
		{"realm_access": map[string]any{"roles": "creator"}},
		{"realm_access": map[string]any{"roles": []any{1, true, nil, map[string]any{"creator": true}}}},
		{"realm_access": []any{"creator"}},
		{"resource_access": map[string]any{clientID: []any{"editor"}}},
		{"resource_access": map[string]any{clientID: map[string]any{"roles": "editor"}}},
		{"resource_access": "editor"},
		{"scope": []any{"write"}},
		{"scope": 42},
	}
	for i, extra := range shapes {
		claims := map[string]any{"aud": clientID}
		for k, v := range extra {
			claims[k] = v
		}
		tok := srv.Mint(claims)
		for j, hh := range []http.Handler{h, hc, hs} {
			if rec := do(t, hh, "GET", "/", "Authorization", "Bearer "+tok); rec.Code != http.StatusForbidden {
				t.Errorf("shape %d guard %d: status %d, want 403", i, j, rec.Code)
			}
		}
	}
}

func TestRequireAnswers403WithInsufficientScope(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, nil)
	next := &okHandler{}
	h := p.Require(idp.RequireRoles(idp.MatchAll, "creator"), idp.RequireScopes(idp.MatchAny, "email"))(next)
	bob := srv.Mint(srv.UserClaims(clientID, "bob"))
	alice := srv.Mint(srv.UserClaims(clientID, "alice", "creator"))
	rec := do(t, h, "POST", "/shorten", "Authorization", "Bearer "+bob)
	if rec.Code != 403 || rec.Header().Get("WWW-Authenticate") != `Bearer realm="demo", error="insufficient_scope"` {
		t.Fatalf("bob: %d %q", rec.Code, rec.Header().Get("WWW-Authenticate"))
	}
	if rec := do(t, h, "POST", "/shorten"); rec.Code != 401 {
		t.Fatalf("no token: %d, want 401", rec.Code)
	}
	if next.calls != 0 {
		t.Fatal("refused requests reached the handler")
	}
	if rec := do(t, h, "POST", "/shorten", "Authorization", "Bearer "+alice); rec.Code != 200 {
		t.Fatalf("alice: %d", rec.Code)
	}
	// Inside Middleware, Require reuses the identity instead of verifying again.
	if rec := do(t, p.Middleware(h), "POST", "/shorten", "Authorization", "Bearer "+alice); rec.Code != 200 {
		t.Fatalf("alice through Middleware: %d", rec.Code)
	}
}

func TestParseMatchStrategy(t *testing.T) {
	for in, want := range map[string]idp.MatchStrategy{"": idp.MatchAll, "all": idp.MatchAll, "ANY": idp.MatchAny} {
		got, err := idp.ParseMatchStrategy(in)
		if err != nil || got != want {
			t.Fatalf("%q: %v %v", in, got, err)
		}
	}
	if _, err := idp.ParseMatchStrategy("some"); err == nil {
		t.Fatal("accepted 'some'")
	}
}
