package proxy

import (
	"net/http"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// With a generic claim mapping, rules judge the mapped roles and groups
// and the identity headers carry the mapped username.
func TestRulesAndHeadersWithClaimMapping(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	cfg := testConfig(idpSrv, up.URL)
	cfg.IDP.Claims = idp.ClaimMapping{Preset: idp.PresetGeneric, Username: "oid", Roles: "https://example.com/roles"}
	cfg.Routes = []RouteConfig{
		{Match: "/ops/", Groups: []string{"ops", "sre"}, Strategy: "any"},
		{Match: "/edit/", Roles: []string{"editor"}},
	}
	_, px := startProxy(t, cfg, Options{}, true)
	mint := func(extra map[string]any) string {
		c := map[string]any{"aud": "shortener", "typ": nil, "oid": "oid-7"}
		for k, v := range extra {
			c[k] = v
		}
		return idpSrv.Mint(c)
	}
	sre := mint(map[string]any{"groups": []any{"sre"}, "https://example.com/roles": []any{"editor"}})
	plain := mint(map[string]any{"groups": []any{"dev"}, "roles": []any{"editor"}})
	badShape := mint(map[string]any{"groups": "sre"})
	for _, tt := range []struct {
		name, path, token string
		want              int
	}{
		{"group held", "/ops/x", sre, 200},
		{"group not held", "/ops/x", plain, 403},
		{"groups of the wrong type", "/ops/x", badShape, 401},
		{"namespaced role held", "/edit/x", sre, 200},
		{"the unmapped roles claim is not read", "/edit/x", plain, 403},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := do(t, "GET", px.URL+tt.path, tt.token, nil, "")
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.want, body)
			}
		})
	}
	resp, _ := do(t, "GET", px.URL+"/ops/x", sre, nil, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatal(resp.Status)
	}
	if got := up.last(t).Header.Get(DefaultUsernameHeader); got != "oid-7" {
		t.Errorf("%s = %q, want the mapped username", DefaultUsernameHeader, got)
	}
}
