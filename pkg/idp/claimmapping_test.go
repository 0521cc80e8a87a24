package idp_test

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// verifyUser verifies tok through Authenticate and returns its User.
func verifyUser(t *testing.T, p *idp.Plugin, tok string) (*idp.User, error) {
	t.Helper()
	req, _ := http.NewRequest("GET", "/", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	r, err := p.Authenticate(req)
	if err != nil {
		return nil, err
	}
	u, _ := idp.UserFrom(r.Context())
	return u, nil
}

// Tokens shaped like other providers', minted by idptest without
// Keycloak's typ, verified with the mapping that reads them, and guarded.
func TestClaimMappingProviders(t *testing.T) {
	srv := idptest.NewServer(t)
	tests := []struct {
		name    string
		mapping idp.ClaimMapping
		claims  map[string]any
		want    idp.User
		guards  []idp.Guard // all allow
		denied  []idp.Guard // all deny
	}{{
		name:    "Entra",
		mapping: idp.ClaimMapping{Preset: idp.PresetGeneric, Username: "oid"},
		claims: map[string]any{"typ": nil, "sub": "s-1", "oid": "0f1e-oid", "preferred_username": "alice@contoso.com",
			"roles": []any{"Reports.Read"}, "groups": []any{"a1b2", "c3d4"}, "scp": []any{"User.Read", "Files.Read"}},
		want:   idp.User{Sub: "s-1", PreferredUsername: "0f1e-oid", RealmRoles: []string{"Reports.Read"}, Groups: []string{"a1b2", "c3d4"}, Scopes: []string{"User.Read", "Files.Read"}},
		guards: []idp.Guard{idp.RequireRoles(idp.MatchAll, "Reports.Read"), idp.RequireGroups(idp.MatchAny, "c3d4"), idp.RequireScopes(idp.MatchAll, "Files.Read", "User.Read")},
		denied: []idp.Guard{idp.RequireRoles(idp.MatchAny, "admin"), idp.RequireGroups(idp.MatchAll, "a1b2", "zz")},
	}, {
		name:    "Entra scp as a string",
		mapping: idp.ClaimMapping{Preset: idp.PresetGeneric},
		claims:  map[string]any{"typ": nil, "sub": "s-2", "email": "bob@contoso.com", "scp": "User.Read Mail.Send"},
		want:    idp.User{Sub: "s-2", PreferredUsername: "bob@contoso.com", Email: "bob@contoso.com", Scopes: []string{"User.Read", "Mail.Send"}},
		guards:  []idp.Guard{idp.RequireScopes(idp.MatchAll, "Mail.Send")},
	}, {
		name:    "generic: username falls back to sub",
		mapping: idp.ClaimMapping{Preset: idp.PresetGeneric},
		claims:  map[string]any{"typ": nil, "sub": "s-3", "preferred_username": "", "scope": "openid read", "scp": []any{"ignored"}},
		want:    idp.User{Sub: "s-3", PreferredUsername: "s-3", Scopes: []string{"openid", "read"}},
	}, {
		name:    "Auth0 namespaced",
		mapping: idp.ClaimMapping{Preset: idp.PresetGeneric, Roles: "https://example.com/roles", Groups: `["https://example.com/app"].teams`},
		claims: map[string]any{"typ": nil, "sub": "auth0|42", "scope": "openid read:links",
			"https://example.com/roles": []any{"editor"}, "https://example.com/app": map[string]any{"teams": []any{"blue"}},
			"roles": []any{"not-this-one"}},
		want:   idp.User{Sub: "auth0|42", PreferredUsername: "auth0|42", RealmRoles: []string{"editor"}, Groups: []string{"blue"}, Scopes: []string{"openid", "read:links"}},
		guards: []idp.Guard{idp.RequireRoles(idp.MatchAll, "editor"), idp.RequireScopes(idp.MatchAll, "read:links"), idp.RequireGroups(idp.MatchAll, "blue")},
		denied: []idp.Guard{idp.RequireRoles(idp.MatchAny, "not-this-one")},
	}, {
		name:    "Zitadel object keys",
		mapping: idp.ClaimMapping{Preset: idp.PresetGeneric, Roles: "keys(urn:zitadel:iam:org:project:roles)"},
		claims: map[string]any{"typ": nil, "sub": "z-1", "preferred_username": "carol",
			"urn:zitadel:iam:org:project:roles": map[string]any{"admin": map[string]any{"9871": "org.example"}, "viewer": map[string]any{}}},
		want:   idp.User{Sub: "z-1", PreferredUsername: "carol", RealmRoles: []string{"admin", "viewer"}},
		guards: []idp.Guard{idp.RequireRoles(idp.MatchAll, "admin", "viewer")},
		denied: []idp.Guard{idp.RequireRoles(idp.MatchAny, "9871")},
	}, {
		name:    "Keycloak preset with a groups override keeps its other readings",
		mapping: idp.ClaimMapping{Groups: "realm_access.groups"},
		claims: map[string]any{"preferred_username": "dave", "realm_access": map[string]any{"roles": []any{"creator"}, "groups": []any{"/staff"}},
			"resource_access": map[string]any{clientID: map[string]any{"roles": []any{"editor"}}}, "scope": "openid"},
		want: idp.User{PreferredUsername: "dave", RealmRoles: []string{"creator"}, Groups: []string{"/staff"}, Scopes: []string{"openid"},
			ClientRoles: map[string][]string{clientID: {"editor"}}},
		guards: []idp.Guard{idp.RequireRoles(idp.MatchAll, "creator"), idp.RequireGroups(idp.MatchAll, "/staff"), idp.RequireClientRoles(clientID, idp.MatchAll, "editor")},
	}, {
		name:    "Keycloak preset reads a groups claim",
		mapping: idp.ClaimMapping{},
		claims:  map[string]any{"preferred_username": "erin", "groups": []any{"/ops"}},
		want:    idp.User{PreferredUsername: "erin", Groups: []string{"/ops"}, Scopes: []string{}},
		guards:  []idp.Guard{idp.RequireGroups(idp.MatchAll, "/ops")},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPlugin(t, srv, func(c *idp.Config) { c.Claims = tt.mapping })
			claims := map[string]any{"aud": clientID}
			for k, v := range tt.claims {
				claims[k] = v
			}
			tok := srv.Mint(claims)
			u, err := verifyUser(t, p, tok)
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			got := *u
			if got.IssuerName != idp.DefaultIssuerName {
				t.Errorf("IssuerName %q, want %q", got.IssuerName, idp.DefaultIssuerName)
			}
			got.IssuerName = ""
			if tt.want.Sub == "" {
				got.Sub = ""
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("user\n got %#v\nwant %#v", got, tt.want)
			}
			for i, g := range tt.guards {
				if !g.Allow(u) {
					t.Errorf("guard %d (%v) denies", i, g)
				}
				if rec := do(t, p.Require(g)(&okHandler{}), "GET", "/", "Authorization", "Bearer "+tok); rec.Code != http.StatusOK {
					t.Errorf("guard %d (%v) through Require: %d", i, g, rec.Code)
				}
			}
			for i, g := range tt.denied {
				if rec := do(t, p.Require(g)(&okHandler{}), "GET", "/", "Authorization", "Bearer "+tok); rec.Code != http.StatusForbidden {
					t.Errorf("denied guard %d (%v) through Require: %d, want 403", i, g, rec.Code)
				}
			}
		})
	}
}

// Mapped claims of the wrong type, or named twice, make the token
// invalid with a reason that names the configured path, never the value.
func TestClaimMappingRefusesWrongShapes(t *testing.T) {
	srv := idptest.NewServer(t)
	generic := newPlugin(t, srv, func(c *idp.Config) { c.Claims = idp.ClaimMapping{Preset: idp.PresetGeneric} })
	zitadel := newPlugin(t, srv, func(c *idp.Config) {
		c.Claims = idp.ClaimMapping{Preset: idp.PresetGeneric, Roles: "keys(urn:zitadel:iam:org:project:roles)", Groups: "org.teams"}
	})
	tests := []struct {
		name   string
		p      *idp.Plugin
		claims map[string]any
		raw    string // when set, the token is these members signed as written (duplicates)
		reason string
	}{
		{"roles a string", generic, map[string]any{"roles": "secret-admin"}, "", "claim roles must be an array of strings"},
		{"roles with a number", generic, map[string]any{"roles": []any{"a", 1}}, "", "claim roles must be an array of strings"},
		{"roles an object", generic, map[string]any{"roles": map[string]any{"a": true}}, "", "claim roles must be an array of strings"},
		{"groups a bool", generic, map[string]any{"groups": true}, "", "claim groups must be an array of strings"},
		{"scope a number", generic, map[string]any{"scope": 42}, "", "claim scope must be a string or an array of strings"},
		{"scp an object", generic, map[string]any{"scp": map[string]any{}}, "", "claim scp must be a string or an array of strings"},
		{"username a number", generic, map[string]any{"preferred_username": 7}, "", "claim preferred_username must be a string"},
		{"email an array", generic, map[string]any{"email": []any{"x@example.com"}}, "", "claim email must be a string"},
		{"keys of an array", zitadel, map[string]any{"urn:zitadel:iam:org:project:roles": []any{"admin"}}, "", "claim keys(urn:zitadel:iam:org:project:roles) must be an object"},
		{"nested through a string", zitadel, map[string]any{"org": "teams"}, "", "claim org.teams: not an object on the way"},
		{"roles twice", generic, nil, `"roles":["a"],"roles":["admin"]`, "duplicate claim roles"},
		{"zitadel object twice", zitadel, nil, `"urn:zitadel:iam:org:project:roles":{},"urn:zitadel:iam:org:project:roles":{"admin":{}}`, "duplicate claim urn:zitadel:iam:org:project:roles"},
		{"a role key twice", zitadel, nil, `"urn:zitadel:iam:org:project:roles":{"admin":{},"admin":{}}`, "duplicate name admin inside claim urn:zitadel:iam:org:project:roles"},
		{"nested name twice", zitadel, nil, `"org":{"teams":["a"],"teams":["b"]}`, "duplicate name teams inside claim org"},
	}
	raw := newRawSigner(t, srv)
	future := time.Now().Add(time.Hour)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claims := map[string]any{"aud": clientID, "typ": nil}
			for k, v := range tt.claims {
				claims[k] = v
			}
			var tok string
			if tt.raw != "" {
				tok = raw.sign(t, `{"alg":"RS256","kid":"raw-signer"}`, claimsJSON(srv, future, ","+tt.raw), nil)
			} else {
				tok = srv.Mint(claims)
			}
			_, err := verifyUser(t, tt.p, tok)
			if !errors.Is(err, idp.ErrInvalidToken) {
				t.Fatalf("err = %v, want ErrInvalidToken", err)
			}
			if got := idp.Reason(err); got != tt.reason {
				t.Errorf("reason %q, want %q", got, tt.reason)
			}
			if strings.Contains(idp.Reason(err), "secret-admin") {
				t.Errorf("reason leaks a claim value: %q", idp.Reason(err))
			}
		})
	}
}

func TestClaimMappingConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		m    idp.ClaimMapping
		want string
	}{
		{idp.ClaimMapping{Preset: "okta"}, `claim preset "okta": want keycloak or generic`},
		{idp.ClaimMapping{Roles: "a..b"}, "claims.roles: claim path"},
		{idp.ClaimMapping{Username: "keys(x)"}, "username is one string"},
		{idp.ClaimMapping{Preset: idp.PresetGeneric, Scopes: " scope"}, "claims.scopes"},
	} {
		err := tc.m.Validate()
		if !errors.Is(err, idp.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want ErrConfig saying %q", tc.m, err, tc.want)
		}
		_, err = idp.New(t.Context(), idp.Config{ServerURL: "https://sso.example.com", Realm: "r", ClientID: "c", Claims: tc.m})
		if !errors.Is(err, idp.ErrConfig) {
			t.Errorf("New with %+v: %v, want ErrConfig", tc.m, err)
		}
	}
	var pe *idp.ClaimPathError
	if err := (idp.ClaimMapping{Groups: `["a`}).Validate(); !errors.As(err, &pe) || pe.Offset != 1 {
		t.Errorf("Validate: %v, want a *ClaimPathError at byte 1", err)
	}
}

func TestTokenPayloadClaimAt(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, nil)
	tok := srv.Mint(map[string]any{"aud": clientID, "tid": "t-1", "https://example.com/roles": []any{"a"},
		"urn:zitadel:iam:org:project:roles": map[string]any{"x": map[string]any{}, "y": 1}, "org": map[string]any{"name": "acme"}})
	tp, err := p.Verify(t.Context(), tok)
	if err != nil {
		t.Fatal(err)
	}
	path := func(s string) idp.ClaimPath {
		cp, err := idp.ParseClaimPath(s)
		if err != nil {
			t.Fatal(err)
		}
		return cp
	}
	var s string
	if ok, err := tp.ClaimAt(path("tid"), &s); !ok || err != nil || s != "t-1" {
		t.Errorf("tid: %v %v %q", ok, err, s)
	}
	if ok, err := tp.ClaimAt(path("org.name"), &s); !ok || err != nil || s != "acme" {
		t.Errorf("org.name: %v %v %q", ok, err, s)
	}
	var list []string
	if ok, err := tp.ClaimAt(path("https://example.com/roles"), &list); !ok || err != nil || !reflect.DeepEqual(list, []string{"a"}) {
		t.Errorf("namespaced: %v %v %q", ok, err, list)
	}
	if ok, err := tp.ClaimAt(path("keys(urn:zitadel:iam:org:project:roles)"), &list); !ok || err != nil || !reflect.DeepEqual(list, []string{"x", "y"}) {
		t.Errorf("keys: %v %v %q", ok, err, list)
	}
	if ok, err := tp.ClaimAt(path("org.missing"), &s); ok || err != nil {
		t.Errorf("absent: %v %v", ok, err)
	}
	if ok, err := tp.ClaimAt(path("tid.x"), &s); ok || !errors.Is(err, idp.ErrInvalidToken) {
		t.Errorf("through a string: %v %v", ok, err)
	}
	if _, err := tp.ClaimAt(path("keys(org)"), &s); err == nil {
		t.Errorf("keys into a *string: no error")
	}
}
