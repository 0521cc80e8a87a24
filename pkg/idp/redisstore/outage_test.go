package redisstore_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/faultnet"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/redisstore"
)

// Connect does not need Redis; a Redis that is down or frozen fails each
// call (never hangs it: go-redis's read timeout, ?read_timeout= in the
// URL, bounds it), and the Store works again once Redis answers.
func TestConnectOutageAndRecovery(t *testing.T) {
	ru := os.Getenv("TEST_REDIS_URL")
	if ru == "" {
		if os.Getenv("IDP_REQUIRE_REDIS") != "" {
			t.Fatal("IDP_REQUIRE_REDIS is set but TEST_REDIS_URL is not")
		}
		t.Skip("TEST_REDIS_URL not set (e.g. redis://127.0.0.1:6379/0)")
	}
	u, err := url.Parse(ru)
	if err != nil {
		t.Fatal(err)
	}
	fp := faultnet.New(t, u.Host)
	fp.Down()
	u.Host = fp.Addr()
	q := u.Query()
	q.Set("read_timeout", "300ms")
	q.Set("dial_timeout", "300ms")
	u.RawQuery = q.Encode()
	s, err := redisstore.Connect(u.String(), "idp-outage-test-"+time.Now().Format("150405.000000")+":")
	if err != nil {
		t.Fatalf("Connect with Redis down: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	// The bounds under test are 300 ms; ctx's 10 s only turns a hang into
	// a failure.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Ping(ctx); err == nil || ctx.Err() != nil {
		t.Fatalf("Ping with Redis down: %v (ctx %v)", err, ctx.Err())
	}

	fp.Up()
	if err := s.Set(ctx, "k", []byte("v"), time.Minute); err != nil {
		t.Fatalf("Set with Redis back: %v", err)
	}
	fp.Freeze()
	if _, err := s.Get(ctx, "k"); err == nil || errors.Is(err, idp.ErrSessionNotFound) || ctx.Err() != nil {
		t.Fatalf("Get with Redis frozen: %v (ctx %v)", err, ctx.Err())
	}
	fp.Thaw()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := s.Get(ctx, "k")
		if err == nil && string(b) == "v" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Get after the thaw: %q %v", b, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = s.Delete(ctx, "k")
}
