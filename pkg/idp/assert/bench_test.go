package assert_test

import (
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp/assert"
)

// BenchmarkSign is the cost of an assertion not in the proxy's cache: the
// first request of an identity for an upstream.
func BenchmarkSign(b *testing.B) {
	k, _ := assert.ParseKeys(mustPEM(b))
	s, err := assert.NewSigner(assert.Options{Issuer: "https://proxy.example.com", Keys: k})
	if err != nil {
		b.Fatal(err)
	}
	c := assert.Claims{Audience: "reports", Subject: "f7a3c1d2-0000-4000-8000-0123456789ab", Username: "alice",
		Email: "alice@example.com", Roles: []string{"offline_access", "default-roles-demo", "creator"},
		IssuerName: "default", ACR: "1", AuthTime: time.Now()}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := s.Sign(c); err != nil {
			b.Fatal(err)
		}
	}
}

func mustPEM(b *testing.B) []byte {
	keys, err := assert.LoadOrCreateKeys(b.TempDir() + "/k.pem")
	if err != nil {
		b.Fatal(err)
	}
	p, err := assert.EncodeKey(keys[0])
	if err != nil {
		b.Fatal(err)
	}
	return p
}
