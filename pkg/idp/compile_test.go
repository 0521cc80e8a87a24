package idp_test

import (
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// Compile reports what Validate reports, and a plugin built from its
// result verifies as one built by New, with the claim mappings of every
// issuer compiled by Compile.
func TestCompileThenNewCompiled(t *testing.T) {
	bad := idp.Config{ServerURL: "https://sso.example.com", Realm: "r", Claims: idp.ClaimMapping{Roles: "a..b"},
		Issuers: []idp.TrustedIssuer{{Name: "ci", IssuerURL: "https://ci.example.com", Audiences: []string{"x"}, Claims: idp.ClaimMapping{Preset: "nope"}}}}
	_, cerr := idp.Compile(bad)
	verr := bad.Validate()
	if cerr == nil || verr == nil || cerr.Error() != verr.Error() {
		t.Fatalf("Compile: %v\nValidate: %v", cerr, verr)
	}

	srv := idptest.NewServer(t, idptest.Options{})
	cfg := idp.Config{ServerURL: srv.URL, Realm: srv.Realm, ClientID: clientID, Claims: idp.ClaimMapping{Roles: "team.roles"}}
	c, err := idp.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Config().AuthPrefix, cfg.WithDefaults().AuthPrefix; got != want {
		t.Fatalf("compiled AuthPrefix %q, want the default %q", got, want)
	}
	p, err := idp.NewCompiled(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if err := p.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	claims := srv.UserClaims(clientID, "alice", "creator")
	claims["team"] = map[string]any{"roles": []string{"t1"}}
	id, err := p.VerifyIdentity(t.Context(), srv.Mint(claims))
	if err != nil {
		t.Fatal(err)
	}
	if len(id.User.RealmRoles) != 1 || id.User.RealmRoles[0] != "t1" {
		t.Fatalf("roles %v, want [t1] through the compiled mapping (claims.roles team.roles)", id.User.RealmRoles)
	}
}
