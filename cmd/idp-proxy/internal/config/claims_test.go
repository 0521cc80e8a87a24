package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

const claimsYAML = `
upstream: {url: "http://127.0.0.1:8000"}
idp:
  server_url: "http://127.0.0.1:8080"
  realm: demo
  client_id: shortener
`

func TestClaimsSection(t *testing.T) {
	c, err := Load(writeFile(t, "c.yaml", claimsYAML+`  claims:
    preset: generic
    username: oid
    roles: https://example.com/roles
    groups: keys(urn:zitadel:iam:org:project:roles)
    scopes: scp
`), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := Compile(c, CompileOptions{NoSecrets: true})
	if err != nil {
		t.Fatal(err)
	}
	want := idp.ClaimMapping{Preset: idp.PresetGeneric, Username: "oid", Roles: "https://example.com/roles",
		Groups: "keys(urn:zitadel:iam:org:project:roles)", Scopes: "scp"}
	if cc.IDP.Claims != want {
		t.Errorf("claims %+v, want %+v", cc.IDP.Claims, want)
	}
}

func TestClaimsSectionErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, key, says string }{
		{"    preset: okta\n", "idp.claims.preset", `idp.claims.preset "okta": want keycloak or generic`},
		{"    roles: realm_access..roles\n", "idp.claims.roles", `idp.claims.roles "realm_access..roles": empty name (two dots, or a dot at an end) (at byte 13)`},
		{"    groups: '[\"a'\n", "idp.claims.groups", `idp.claims.groups "[\"a"`},
		{"    username: keys(x)\n", "idp.claims.username", "keys(...) names a list"},
		{"    scopes: 'a b'\n", "idp.claims.scopes", "in a name"},
	} {
		c, err := Load(writeFile(t, "c.yaml", claimsYAML+"  claims:\n"+tc.yaml), LoadOptions{})
		if err == nil {
			_, err = c.Check()
		}
		var ke *KeyError
		if !errors.As(err, &ke) || ke.Key != tc.key {
			t.Errorf("%q: %v, want a *KeyError for %s", tc.yaml, err, tc.key)
			continue
		}
		if !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%q: %v, want it to say %s", tc.yaml, err, tc.says)
		}
		if n := strings.Count(err.Error(), tc.key); n != 1 {
			t.Errorf("%q: the key is named %d times:\n%v", tc.yaml, n, err)
		}
	}
}
