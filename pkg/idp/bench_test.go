package idp_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// BenchmarkVerify reports warm-key verification with the verified-token
// cache off (every call checks the signature) and on (cache hits).
func BenchmarkVerify(b *testing.B) {
	srv := idptest.NewServer(b)
	for _, alg := range []string{"RS256", "ES256"} {
		for _, cached := range []bool{false, true} {
			name := alg + "/uncached"
			size := -1
			if cached {
				name, size = alg+"/cached", 0
			}
			b.Run(name, func(b *testing.B) {
				p := newPlugin(b, srv, func(c *idp.Config) {
					c.Algorithms = []string{"RS256", "ES256"}
					c.VerifiedCacheSize = size
				})
				tok := srv.MintWith(idptest.MintOptions{Alg: alg}, srv.UserClaims(clientID, "alice", "creator"))
				ctx := b.Context()
				if _, err := p.Verify(ctx, tok); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if _, err := p.Verify(ctx, tok); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkMiddleware measures the whole per-request cost of the
// middleware with a cached valid token, against the bare handler.
func BenchmarkMiddleware(b *testing.B) {
	srv := idptest.NewServer(b)
	p := newPlugin(b, srv, nil)
	tok := srv.Mint(srv.UserClaims(clientID, "alice", "creator"))
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	for _, c := range []struct {
		name string
		h    http.Handler
	}{
		{"bare", next},
		{"middleware", p.Middleware(next)},
		{"middleware+guard", p.Middleware(p.Require(idp.RequireRoles(idp.MatchAny, "creator"))(next))},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/x", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				c.h.ServeHTTP(w, req)
			}
		})
	}
}

func BenchmarkTokenFromRequest(b *testing.B) {
	srv := idptest.NewServer(b)
	p := newPlugin(b, srv, nil)
	req := httptest.NewRequest("GET", "/x", nil)
	req.Header.Set("Authorization", "Bearer "+srv.Mint(srv.UserClaims(clientID, "alice")))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.TokenFromRequest(req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyGeneric is BenchmarkVerify's RS256 case with the generic
// claim preset on an Entra-shaped token: the cost of the mapped decoding.
func BenchmarkVerifyGeneric(b *testing.B) {
	srv := idptest.NewServer(b)
	claims := map[string]any{"aud": clientID, "typ": nil, "oid": "0f1e2d3c", "preferred_username": "alice@example.com",
		"email": "alice@example.com", "roles": []any{"Reports.Read", "creator"}, "groups": []any{"a1b2", "c3d4"},
		"scp": []any{"User.Read", "Files.Read"}, "tid": "72f988bf", "name": "Alice Example"}
	for _, cached := range []bool{false, true} {
		name, size := "RS256/uncached", -1
		if cached {
			name, size = "RS256/cached", 0
		}
		b.Run(name, func(b *testing.B) {
			p := newPlugin(b, srv, func(c *idp.Config) {
				c.VerifiedCacheSize = size
				c.Claims = idp.ClaimMapping{Preset: idp.PresetGeneric}
			})
			tok := srv.Mint(claims)
			ctx := b.Context()
			if _, err := p.Verify(ctx, tok); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Verify(ctx, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
