package idp_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// BenchmarkVerifyMissVsNaive compares, in the same run and in parallel,
// Verify on tokens it has not seen (cache disabled: every call is a miss)
// with the naive per-request check of bench/naiveproxy (golang-jwt's
// Parse with a keyfunc JWKS): the cost of a cache miss is the RSA verify
// and little else.
func BenchmarkVerifyMissVsNaive(b *testing.B) {
	srv := idptest.NewServer(b, idptest.Options{})
	toks := make([]string, 2000)
	for i := range toks {
		c := srv.UserClaims(clientID, "user", "creator", "reader")
		c["jti"] = fmt.Sprintf("jti-%d", i)
		toks[i] = srv.Mint(c)
	}
	p := newPlugin(b, srv, func(c *idp.Config) { c.VerifiedCacheSize = -1 })
	if _, err := p.Verify(b.Context(), toks[0]); err != nil {
		b.Fatal(err)
	}
	kf, err := keyfunc.NewDefaultCtx(b.Context(), []string{srv.Issuer + "/protocol/openid-connect/certs"})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("ours", func(b *testing.B) {
		var n atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := p.Verify(b.Context(), toks[n.Add(1)%int64(len(toks))]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("naive", func(b *testing.B) {
		var n atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, err := jwt.Parse(toks[n.Add(1)%int64(len(toks))], kf.Keyfunc, jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer(srv.Issuer), jwt.WithExpirationRequired())
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
