package idp_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// A token bound to a key (cnf) is refused with ErrSenderConstrained (401
// invalid_token, a reason naming the binding) until proofs of possession
// are checked: accepting it under Bearer is the downgrade of RFC 9449
// §7.2 (a stolen DPoP-bound token becomes usable by anyone) and ignores
// the certificate binding of RFC 8705 §3. Keycloak's DPoP-bound tokens
// (typ "DPoP") are access tokens refused for that reason, not as "not an
// access token".
func TestSenderConstrainedTokensRefused(t *testing.T) {
	srv := idptest.NewServer(t, idptest.Options{})
	p := newPlugin(t, srv, nil)
	const thumb = "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"
	mint := func(extra map[string]any) string {
		c := srv.UserClaims(clientID, "alice", "creator")
		c["aud"] = clientID
		for k, v := range extra {
			c[k] = v
		}
		return srv.Mint(c)
	}
	for _, tc := range []struct {
		name, token, reason string
	}{
		{"RFC 9449 §7.2: DPoP-bound (cnf.jkt) under Bearer", mint(map[string]any{"cnf": map[string]any{"jkt": thumb}}), "DPoP, cnf.jkt"},
		{"RFC 9449 §7.2: Keycloak's DPoP-bound token (typ DPoP)", mint(map[string]any{"typ": "DPoP", "cnf": map[string]any{"jkt": thumb}}), "DPoP, cnf.jkt"},
		{"RFC 9449 §7.2: typ DPoP without its cnf", mint(map[string]any{"typ": "DPoP"}), "DPoP, cnf.jkt"},
		{"RFC 8705 §3: certificate-bound (cnf x5t#S256) under Bearer", mint(map[string]any{"cnf": map[string]any{"x5t#S256": thumb}}), "client certificate, cnf x5t#S256"},
		{"RFC 7800: bound to a key given whole (cnf.jwk)", mint(map[string]any{"cnf": map[string]any{"jwk": map[string]any{"kty": "EC"}}}), "sender-constrained token (cnf)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 2 { // never cached as verified: refused every time
				_, err := p.Verify(t.Context(), tc.token)
				if !errors.Is(err, idp.ErrSenderConstrained) || !errors.Is(err, idp.ErrInvalidToken) {
					t.Fatalf("Verify = %v, want ErrSenderConstrained and ErrInvalidToken", err)
				}
				if r := idp.Reason(err); !strings.Contains(r, tc.reason) || !strings.Contains(r, "proof of possession is not supported") {
					t.Fatalf("reason %q, want it to name %q and proof of possession", r, tc.reason)
				}
			}
			r, _ := http.NewRequest("GET", "/x", nil)
			r.Header.Set("Authorization", "Bearer "+tc.token)
			if v := p.Authorize(r); v.Outcome != idp.InvalidToken || !errors.Is(v.Err, idp.ErrSenderConstrained) {
				t.Fatalf("Authorize = %v %v, want invalid_token", v.Outcome, v.Err)
			}
			h := &okHandler{}
			rec := do(t, p.Middleware(h), "GET", "/x", "Authorization", "Bearer "+tc.token)
			if rec.Code != http.StatusUnauthorized || h.calls != 0 ||
				!strings.Contains(rec.Header().Get("WWW-Authenticate"), `error="invalid_token", error_description="sender-constrained token`) {
				t.Fatalf("Middleware: %d %q (handler called %d times)", rec.Code, rec.Header().Get("WWW-Authenticate"), h.calls)
			}
		})
	}
	// A null cnf is no binding, and a plain Keycloak token passes.
	for _, tok := range []string{mint(nil), mint(map[string]any{"typ": "Bearer"})} {
		if _, err := p.Verify(t.Context(), tok); err != nil {
			t.Fatalf("unbound token: %v", err)
		}
	}
	tok := srv.MintJSON(idptest.MintOptions{}, userJSON(srv, `,"cnf":null`))
	if _, err := p.Verify(t.Context(), tok); err != nil {
		t.Fatalf("cnf null: %v", err)
	}
}
