package idp_test

import (
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// FuzzTokenFromRequest: any Authorization header value yields a token in
// the b64token alphabet or one of the sentinel errors, never a panic.
func FuzzTokenFromRequest(f *testing.F) {
	for _, s := range []string{"Bearer a.b.c", "bearer a", "Basic x", "Bearer", "Bearer  a==", "Bearer a b", "\x00", "Bearer \xff"} {
		f.Add(s)
	}
	srv := idptest.NewServer(f)
	p := newPlugin(f, srv, nil)
	f.Fuzz(func(t *testing.T, header string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header["Authorization"] = []string{header}
		tok, err := p.TokenFromRequest(r)
		if err != nil {
			if !errors.Is(err, idp.ErrNoToken) && !errors.Is(err, idp.ErrInvalidToken) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		if tok == "" {
			t.Fatal("empty token without error")
		}
		for i := 0; i < len(tok); i++ {
			c := tok[i]
			if c <= ' ' || c >= 0x7f || c == '"' || c == ',' {
				t.Fatalf("token %q contains %q", tok, c)
			}
		}
	})
}

// FuzzVerify: any string given as a token is rejected with a sentinel
// error (or, for a well-formed signed token, accepted), never a panic.
func FuzzVerify(f *testing.F) {
	srv := idptest.NewServer(f)
	p := newPlugin(f, srv, func(c *idp.Config) { c.Algorithms = []string{"RS256", "ES256"} })
	f.Add(srv.Mint(map[string]any{"aud": clientID}))
	f.Add(srv.MintWith(idptest.MintOptions{Alg: "ES256"}, map[string]any{"aud": clientID}))
	f.Add("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.")
	f.Add("a.b.c")
	f.Fuzz(func(t *testing.T, tok string) {
		tp, err := p.Verify(t.Context(), tok)
		if err == nil {
			if tp == nil || tp.Subject == "" {
				t.Fatal("accepted without a payload")
			}
			return
		}
		if !errors.Is(err, idp.ErrInvalidToken) && !errors.Is(err, idp.ErrNoToken) {
			t.Fatalf("unexpected error class: %v", err)
		}
	})
}
