package acmecert_test

import (
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/acme/autocert"

	"github.com/idp-proxy/idp-proxy/internal/acmecert"
	"github.com/idp-proxy/idp-proxy/internal/faultnet"
)

// redisURL is TEST_REDIS_URL; in CI (IDP_REQUIRE_REDIS=1) its absence
// fails the test, elsewhere it skips.
func redisURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("TEST_REDIS_URL")
	if u == "" {
		if os.Getenv("IDP_REQUIRE_REDIS") != "" {
			t.Fatal("IDP_REQUIRE_REDIS is set but TEST_REDIS_URL is not")
		}
		t.Skip("TEST_REDIS_URL not set (e.g. redis://127.0.0.1:6379/0): Redis certificate cache tests skipped")
	}
	return u
}

func testPrefix(t *testing.T) string {
	return "idp-test-" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + time.Now().Format("150405.000000") + ":"
}

func TestRedisCacheOperations(t *testing.T) {
	u := redisURL(t)
	prefix := testPrefix(t)
	c, err := acmecert.ConnectRedisCache(u, prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	other, err := acmecert.ConnectRedisCache(u, prefix+"other:")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx := t.Context()
	if _, err := c.Get(ctx, "app.example.test"); !errors.Is(err, autocert.ErrCacheMiss) {
		t.Fatalf("absent key: %v, want autocert.ErrCacheMiss", err)
	}
	pem := []byte("-----BEGIN EC PRIVATE KEY-----\nx\n-----END EC PRIVATE KEY-----\n")
	if err := c.Put(ctx, "app.example.test", pem); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(ctx, "app.example.test")
	if err != nil || string(got) != string(pem) {
		t.Fatalf("Get after Put = %q, %v", got, err)
	}
	// The prefix separates deployments sharing one database.
	if _, err := other.Get(ctx, "app.example.test"); !errors.Is(err, autocert.ErrCacheMiss) {
		t.Fatalf("another prefix sees the key: %v", err)
	}
	if err := c.Delete(ctx, "app.example.test"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "app.example.test"); !errors.Is(err, autocert.ErrCacheMiss) {
		t.Fatalf("deleted key: %v", err)
	}
}

// A Redis that does not answer is an error, never a cache miss: a miss
// would make autocert order a new certificate from the CA for every
// handshake while Redis is down, into the CA's rate limits.
func TestRedisCacheOutageIsNotAMiss(t *testing.T) {
	u := redisURL(t)
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	fp := faultnet.New(t, parsed.Host)
	parsed.Host = fp.Addr()
	c, err := acmecert.ConnectRedisCache(parsed.String(), testPrefix(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	if err := c.Put(ctx, "app.example.test", []byte("pem")); err != nil {
		t.Fatal(err)
	}
	for _, fault := range []struct {
		name    string
		on, off func()
	}{{"down", fp.Down, fp.Up}, {"frozen", fp.Freeze, fp.Thaw}} {
		fault.on()
		for _, key := range []string{"app.example.test", "absent.example.test"} {
			if _, err := c.Get(ctx, key); err == nil || errors.Is(err, autocert.ErrCacheMiss) {
				t.Errorf("%s: Get(%s) = %v, want an error that is not a cache miss", fault.name, key, err)
			}
		}
		if err := c.Put(ctx, "app.example.test", []byte("pem")); err == nil {
			t.Errorf("%s: Put succeeded", fault.name)
		}
		fault.off()
	}
	if got, err := c.Get(ctx, "app.example.test"); err != nil || string(got) != "pem" {
		t.Fatalf("after recovery: %q, %v", got, err)
	}
}
