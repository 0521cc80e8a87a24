package pgstore_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// raceClock is a clock the test moves: the redirect caches of the
// replicas expire entries by it, so the bound is checked without sleeping.
type raceClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *raceClock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *raceClock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// TestEditRaceAcrossReplicas: three replicas on one database redirect a
// link while it is edited through all three. No redirect ever goes to a
// URL that was never stored, and once CacheTTL has passed after the last
// edit, every replica redirects to its URL.
func TestEditRaceAcrossReplicas(t *testing.T) {
	const ttl = 5 * time.Second
	clock := &raceClock{t: time.Now().UTC()}
	_, hs := replicasWith(t, 3, replicaOptions(clock.now, ttl))
	create := httptest.NewRecorder()
	hs[0].ServeHTTP(create, jsonRequest("POST", "/links", `{"url":"https://example.com/v0"}`))
	if create.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", create.Code, create.Body)
	}
	code := strings.TrimPrefix(create.Header().Get("Location"), "https://sho.rt/links/")

	// stored[i] is true once version i may be in the database.
	const versions = 15
	var stored [versions + 1]atomic.Bool
	stored[0].Store(true)
	stop := make(chan struct{})
	var redirects atomic.Int64
	var wg sync.WaitGroup
	for _, h := range hs {
		for range 4 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, httptest.NewRequest("GET", "/"+code, nil))
					redirects.Add(1)
					var v int
					loc := rec.Header().Get("Location")
					if _, err := fmt.Sscanf(loc, "https://example.com/v%d", &v); rec.Code != http.StatusFound || err != nil ||
						v < 0 || v > versions || !stored[v].Load() {
						t.Errorf("redirect: %d to %q, a URL never stored", rec.Code, loc)
						return
					}
				}
			})
		}
	}
	for v := 1; v <= versions; v++ {
		stored[v].Store(true) // before the PATCH: a redirect may see it as soon as it commits
		rec := httptest.NewRecorder()
		hs[v%3].ServeHTTP(rec, jsonRequest("PATCH", "/links/"+code, fmt.Sprintf(`{"url":"https://example.com/v%d"}`, v)))
		if rec.Code != http.StatusOK {
			t.Fatalf("PATCH v%d: %d %s", v, rec.Code, rec.Body)
		}
		clock.add(ttl / 3) // some cache entries expire between edits
	}
	close(stop)
	wg.Wait()
	if redirects.Load() < 100 {
		t.Fatalf("only %d redirects raced the edits", redirects.Load())
	}
	// The bound: CacheTTL after the last edit, every replica serves it.
	clock.add(ttl)
	for i, h := range hs {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/"+code, nil))
		if want := fmt.Sprintf("https://example.com/v%d", versions); rec.Header().Get("Location") != want {
			t.Errorf("replica %d: %d to %q one TTL after the last edit, want %q", i, rec.Code, rec.Header().Get("Location"), want)
		}
	}
}

func jsonRequest(method, target, body string) *http.Request {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-User", "alice")
	return r
}
