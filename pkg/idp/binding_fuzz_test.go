package idp

import (
	"net/http"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

// FuzzConfirmation: the cnf reader never panics, binds a token only to a
// non-empty thumbprint of exactly one method, and a token of Keycloak's
// typ "DPoP" is never read as anything but DPoP-bound or refused.
func FuzzConfirmation(f *testing.F) {
	for _, s := range []string{`{}`, `{"cnf":null}`, `{"cnf":{"jkt":"abc"}}`, `{"cnf":{"x5t#S256":"abc"}}`,
		`{"cnf":{"jkt":"a","x5t#S256":"b"}}`, `{"cnf":{"jwk":{"kty":"EC"}}}`, `{"cnf":{"jkt":1}}`, `{"cnf":{"jkt":""}}`,
		`{"cnf":[]}`, `{"cnf":"x"}`, `{"typ":"DPoP"}`, `{"typ":"dpop","cnf":{"x5t#S256":"b"}}`, `{"cnf":{"jkt":"a","jkt":"b"}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		c, err := token.DecodeClaims(nil, []byte(payload))
		if err != nil {
			return
		}
		got := confirmationOf(&accessKind, c)
		switch got.kind {
		case cnfJKT, cnfX5T:
			if got.value == "" || !c.Cnf {
				t.Fatalf("%s: bound to %q", payload, got.value)
			}
		case cnfNone:
			if c.Cnf || strings.EqualFold(c.Typ, "DPoP") {
				t.Fatalf("%s: read as a bearer token", payload)
			}
		}
		if strings.EqualFold(c.Typ, "DPoP") && got.kind != cnfJKT && got.kind != cnfBad {
			t.Fatalf("%s: typ DPoP read as %d", payload, got.kind)
		}
		if got := confirmationOf(&idKind, c); got.kind != cnfNone {
			t.Fatalf("an ID token's cnf was read: %d", got.kind)
		}
	})
}

// FuzzAuthorizationScheme: the Authorization reader takes the token of
// the Bearer and DPoP schemes only (case-insensitive), reports which, and
// never panics.
func FuzzAuthorizationScheme(f *testing.F) {
	for _, s := range []string{"Bearer abc", "DPoP abc", "dpop abc", "bearer  abc", "Basic abc", "DPoPabc", "DPoP", "", " DPoP abc", "DPoP\tabc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		tok, dpop, err := authorizationToken(http.Header{"Authorization": {v}})
		if err != nil {
			return
		}
		scheme, _, _ := strings.Cut(v, " ")
		if dpop != strings.EqualFold(scheme, "DPoP") || !dpop && !strings.EqualFold(scheme, "Bearer") {
			t.Fatalf("%q: dpop=%v", v, dpop)
		}
		if strings.HasPrefix(tok, " ") {
			t.Fatalf("%q: token %q", v, tok)
		}
	})
}
