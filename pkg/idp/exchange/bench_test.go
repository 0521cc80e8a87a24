package exchange

import (
	"context"
	"testing"
)

// BenchmarkExchangeFirst: the first exchange of a caller's token, one
// round trip to an idptest provider on loopback (which verifies the
// subject token and signs the new one with RS256: most of the time).
func BenchmarkExchangeFirst(b *testing.B) {
	s := newSetup(b)
	subs := make([]Subject, b.N)
	for i := range subs {
		subs[i] = s.subject("alice")
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.ex.Exchange(ctx, subs[i], orders); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExchangeCached: a repeated token, answered by the cache.
func BenchmarkExchangeCached(b *testing.B) {
	s := newSetup(b)
	sub := s.subject("alice")
	ctx := context.Background()
	if _, err := s.ex.Exchange(ctx, sub, orders); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := s.ex.Exchange(ctx, sub, orders); err != nil {
			b.Fatal(err)
		}
	}
}
