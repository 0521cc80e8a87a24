package idp_test

import (
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// TestCallbackIDTokenMemberTypes pins the checks on an ID token's members
// that go-oidc's verifier made before the token pipeline took ID tokens
// over: nonce, at_hash, azp and typ are strings when present (null reads
// as absent), and distributed claims (_claim_names) name a source that
// _claim_sources holds.
func TestCallbackIDTokenMemberTypes(t *testing.T) {
	refused := []struct {
		name string
		set  func(map[string]any)
	}{
		{"nonce a number", func(c map[string]any) { c["nonce"] = 7 }},
		{"nonce null", func(c map[string]any) { c["nonce"] = nil }},
		{"at_hash a number", func(c map[string]any) { c["at_hash"] = 7 }},
		{"azp a number", func(c map[string]any) { c["azp"] = 7 }},
		{"typ a list", func(c map[string]any) { c["typ"] = []any{"ID"} }},
		{"_claim_names naming no source", func(c map[string]any) {
			c["_claim_names"] = map[string]any{"groups": "src1"}
		}},
		{"_claim_names naming an empty source", func(c map[string]any) {
			c["_claim_names"] = map[string]any{"groups": ""}
			c["_claim_sources"] = map[string]any{"": map[string]any{"endpoint": "https://graph.example/"}}
		}},
		{"_claim_names not an object", func(c map[string]any) { c["_claim_names"] = "groups" }},
		{"_claim_sources entry not an object", func(c map[string]any) {
			c["_claim_names"] = map[string]any{"groups": "src1"}
			c["_claim_sources"] = map[string]any{"src1": "https://graph.example/"}
		}},
		{"_claim_sources endpoint a number", func(c map[string]any) {
			c["_claim_names"] = map[string]any{"groups": "src1"}
			c["_claim_sources"] = map[string]any{"src1": map[string]any{"endpoint": 7}}
		}},
	}
	e := newFlowEnv(t, idptest.Options{}, nil)
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			e.idp.SetClaimsHook(idHook(tc.set))
			defer e.idp.SetClaimsHook(nil)
			wantProblem(t, e.get(t, e.loginToCallback(t)), 401, "ID token is invalid")
		})
	}
	accepted := []struct {
		name string
		set  func(map[string]any)
	}{
		{"at_hash null", func(c map[string]any) { c["at_hash"] = nil }},
		{"azp and typ null", func(c map[string]any) { c["azp"], c["typ"] = nil, nil }},
		{"distributed claims with their source", func(c map[string]any) {
			c["_claim_names"] = map[string]any{"groups": "src1"}
			c["_claim_sources"] = map[string]any{"src1": map[string]any{"endpoint": "https://graph.example/", "access_token": nil}}
		}},
		{"_claim_names null", func(c map[string]any) { c["_claim_names"] = nil }},
	}
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			e.idp.SetClaimsHook(idHook(tc.set))
			defer e.idp.SetClaimsHook(nil)
			decodeDoc(t, e.get(t, e.loginToCallback(t)))
		})
	}
}
