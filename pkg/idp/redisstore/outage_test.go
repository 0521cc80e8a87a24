package redisstore_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/faultnet"
	"github.com/idp-proxy/idp-proxy/internal/testneed"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
	"github.com/idp-proxy/idp-proxy/pkg/idp/redisstore"
)

// probeTimeout is the readiness probe's timeoutSeconds in the shipped
// manifests (deploy/k8s): a Redis call must give up well before it.
const probeTimeout = 2 * time.Second

// behindFaultnet returns TEST_REDIS_URL (skipping without it) with its
// host replaced by a faultnet proxy's, and the proxy.
func behindFaultnet(t *testing.T) (string, *faultnet.Proxy) {
	t.Helper()
	ru := testneed.RedisURL(t, "the Redis outage tests")
	u, err := url.Parse(ru)
	if err != nil {
		t.Fatal(err)
	}
	fp := faultnet.New(t, u.Host)
	u.Host = fp.Addr()
	return u.String(), fp
}

func testPrefix(t *testing.T) string {
	return "idp-test-" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + time.Now().Format("150405.000000") + ":"
}

// Connect does not need Redis; a Redis that is down or frozen fails each
// call (never hangs it), and the Store works again once Redis answers.
func TestConnectOutageAndRecovery(t *testing.T) {
	ru, fp := behindFaultnet(t)
	fp.Down()
	s, err := redisstore.Connect(ru, testPrefix(t))
	if err != nil {
		t.Fatalf("Connect with Redis down: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	// ctx's minute only turns a hang into a failure.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
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
	// The frozen call's connection may be the next one handed out; a call
	// that fails on it is discarded with it, so some call succeeds soon.
	for {
		b, err := s.Get(ctx, "k")
		if err == nil && string(b) == "v" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("Get after the thaw: %q %v", b, err)
		}
	}
	_ = s.Delete(ctx, "k")
}

// With Redis frozen and the URL setting no timeout, every call gives up
// within DefaultTimeout, far inside the readiness probe's timeout: the
// readiness check (PingSessionStore), a request with a session, and each
// of more calls than the connection pool holds (which would otherwise
// queue for a connection, then wait go-redis's 5 s read timeout).
func TestFrozenRedisEveryCallBounded(t *testing.T) {
	ru, fp := behindFaultnet(t)
	st, err := redisstore.Connect(ru, testPrefix(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if st.Timeout() != redisstore.DefaultTimeout || redisstore.DefaultTimeout >= probeTimeout {
		t.Fatalf("bound %s (default %s), want the default, under the probe's %s", st.Timeout(), redisstore.DefaultTimeout, probeTimeout)
	}
	idpSrv := idptest.NewServer(t)
	p, err := idp.New(t.Context(), idp.Config{
		ServerURL: idpSrv.URL, Realm: idpSrv.Realm, ClientID: "app", ClientSecret: "app-secret",
		IncludeRoutes: true, RedirectURI: "http://127.0.0.1:1/auth/callback",
		SessionSecret: []byte(strings.Repeat("k", 32)), Session: &idp.SessionConfig{Backend: st},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	// Warm the pool: the frozen calls then hang on live connections.
	ctx := t.Context()
	if err := st.Set(ctx, "k", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	fp.Freeze()
	t.Cleanup(fp.Thaw)

	type result struct {
		what    string
		err     error
		elapsed time.Duration
	}
	var (
		mu      sync.Mutex
		results []result
		wg      sync.WaitGroup
	)
	run := func(what string, f func() error) {
		wg.Go(func() {
			start := time.Now()
			err := f()
			mu.Lock()
			results = append(results, result{what, err, time.Since(start)})
			mu.Unlock()
		})
	}
	// The probe's own deadline, as pkg/proxy's Readyz gives it.
	run("readiness", func() error {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		defer cancel()
		checked, err := p.PingSessionStore(pctx)
		if !checked {
			return errors.New("not checked")
		}
		return err
	})
	for range 4 {
		run("session request", func() error {
			r, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/me", nil)
			r.AddCookie(&http.Cookie{Name: idp.DefaultSessionCookie, Value: strings.Repeat("A", 52)})
			if v := p.Authorize(r); v.Status() != http.StatusServiceUnavailable || !errors.Is(v.Err, idp.ErrSessionStoreUnavailable) {
				return errors.New("verdict " + v.Detail())
			}
			return errors.New("unavailable") // as wanted
		})
	}
	for range 60 { // more than the pool's 10 connections a CPU
		run("get", func() error { _, err := st.Get(ctx, "k"); return err })
	}
	wg.Wait()
	for _, r := range results {
		if r.err == nil || strings.HasPrefix(r.err.Error(), "verdict") || r.err.Error() == "not checked" {
			t.Errorf("%s with Redis frozen: %v, want a failure", r.what, r.err)
		}
		if r.elapsed >= probeTimeout {
			t.Errorf("%s with Redis frozen took %s, want less than the probe's %s", r.what, r.elapsed.Round(time.Millisecond), probeTimeout)
		}
	}
}

// The bound of every call: DefaultTimeout, or the URL's read_timeout.
func TestConnectTimeout(t *testing.T) {
	for url, want := range map[string]time.Duration{
		"redis://127.0.0.1:1/0":                     redisstore.DefaultTimeout,
		"redis://127.0.0.1:1/0?read_timeout=300ms":  300 * time.Millisecond,
		"redis://127.0.0.1:1/0?read_timeout=3s":     3 * time.Second,
		"redis://127.0.0.1:1/0?read_timeout=-1":     0,
		"redis://127.0.0.1:1/0?dial_timeout=200ms":  redisstore.DefaultTimeout,
		"rediss://u:p@127.0.0.1:1/2?pool_size=4&x=": 0, // refused: unknown option
	} {
		s, err := redisstore.Connect(url, "")
		if strings.Contains(url, "x=") {
			if err == nil {
				_ = s.Close()
				t.Errorf("Connect(%s): no error for an unknown option", url)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Connect(%s): %v", url, err)
		}
		if got := s.Timeout(); got != want {
			t.Errorf("Connect(%s).Timeout() = %s, want %s", url, got, want)
		}
		_ = s.Close()
	}
}
