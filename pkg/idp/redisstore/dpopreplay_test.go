package redisstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idp-proxy/idp-proxy/pkg/idp/redisstore"
)

// RFC 9449 §11.1: the shared replay cache accepts a proof's key once
// within its window, and says that Redis failed when it does.
func TestDPoPReplayClaimsOnce_RFC9449_11_1(t *testing.T) {
	s := store(t)
	r := s.DPoPReplay()
	ctx := context.Background()
	until := time.Now().Add(time.Minute)
	if first, err := r.Claim(ctx, "k1", until); !first || err != nil {
		t.Fatalf("first claim: %v %v", first, err)
	}
	if first, err := r.Claim(ctx, "k1", until); first || err != nil {
		t.Fatalf("second claim: %v %v", first, err)
	}
	if first, err := r.Claim(ctx, "k2", time.Now().Add(-time.Second)); !first || err != nil {
		t.Fatalf("an expiring key: %v %v", first, err)
	}
	down := redisstore.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}), "x:")
	defer down.Close()
	if _, err := down.DPoPReplay().Claim(ctx, "k", until); err == nil || !strings.Contains(err.Error(), "Redis") {
		t.Fatalf("outage: %v, want an error naming Redis", err)
	}
}
