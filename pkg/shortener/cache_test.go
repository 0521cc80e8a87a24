package shortener

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// countingStore counts Get calls and can fail them.
type countingStore struct {
	fakeStore
	mu   sync.Mutex
	gets int
	fail error
}

func (c *countingStore) Get(ctx context.Context, code string) (Link, error) {
	c.mu.Lock()
	c.gets++
	fail := c.fail
	c.mu.Unlock()
	if fail != nil {
		return Link{}, fail
	}
	return c.fakeStore.Get(ctx, code)
}

func (c *countingStore) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
func newCountingStore() *countingStore {
	return &countingStore{fakeStore: fakeStore{links: map[string]Link{}}}
}
func (c *countingStore) set(code, u string) {
	c.mu.Lock()
	c.links[code] = Link{Code: code, URL: u}
	c.mu.Unlock()
}

func TestCacheServesRepeatsWithoutTheStore(t *testing.T) {
	st := newCountingStore()
	st.set("Abc1234", "https://example.com/a")
	s, err := New(st, Options{CacheSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHandler(s, HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/Abc1234", nil))
		if rec.Code != http.StatusFound || rec.Header().Get("Location") != "https://example.com/a" {
			t.Fatalf("GET = %d %q", rec.Code, rec.Header().Get("Location"))
		}
		if l, err := s.Resolve(t.Context(), "Abc1234"); err != nil || l.URL != "https://example.com/a" {
			t.Fatalf("Resolve = %+v, %v", l, err)
		}
	}
	if n := st.count(); n != 1 {
		t.Fatalf("store Get called %d times, want 1", n)
	}
}

func TestCacheOff(t *testing.T) {
	st := newCountingStore()
	st.set("Abc1234", "https://example.com/a")
	s, _ := New(st, Options{})
	for range 3 {
		if _, err := s.Resolve(t.Context(), "Abc1234"); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.count(); n != 3 {
		t.Fatalf("store Get called %d times without a cache, want 3", n)
	}
	if _, err := New(st, Options{CacheSize: -1}); err == nil {
		t.Fatal("negative cache size accepted")
	}
}

func TestCacheMissesAndErrorsAreNotCached(t *testing.T) {
	ctx := t.Context()
	st := newCountingStore()
	s, _ := New(st, Options{CacheSize: 10})
	if _, err := s.Resolve(ctx, "Later12"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Resolve = %v, want ErrNotFound", err)
	}
	st.set("Later12", "https://example.com/later") // created by another replica
	if l, err := s.Resolve(ctx, "Later12"); err != nil || l.URL != "https://example.com/later" {
		t.Fatalf("after creation: %+v, %v", l, err)
	}
	st.set("Flaky12", "https://example.com/f")
	st.fail = errors.New("connection refused")
	if _, err := s.Resolve(ctx, "Flaky12"); err == nil {
		t.Fatal("store error hidden")
	}
	st.fail = nil
	if l, err := s.Resolve(ctx, "Flaky12"); err != nil || l.URL != "https://example.com/f" {
		t.Fatalf("after recovery: %+v, %v", l, err)
	}
	if _, err := s.Resolve(ctx, "bad!"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("malformed code: %v", err)
	}
}

func TestCacheTTL(t *testing.T) {
	ctx := t.Context()
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	st := newCountingStore()
	st.set("Gone123", "https://example.com/old")
	s, _ := New(st, Options{CacheSize: 10, CacheTTL: time.Minute, Now: clock.now})
	if _, err := s.Resolve(ctx, "Gone123"); err != nil {
		t.Fatal(err)
	}
	delete(st.links, "Gone123") // removed by hand
	clock.add(59 * time.Second)
	if _, err := s.Resolve(ctx, "Gone123"); err != nil {
		t.Fatalf("within the TTL: %v", err)
	}
	clock.add(time.Second)
	if _, err := s.Resolve(ctx, "Gone123"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after the TTL: %v, want ErrNotFound", err)
	}
}

func TestCacheBounded(t *testing.T) {
	ctx := t.Context()
	st := newCountingStore()
	for i := range 1000 {
		st.set(fmt.Sprintf("Code%03d", i), fmt.Sprintf("https://example.com/%d", i))
	}
	s, _ := New(st, Options{CacheSize: 100})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				code := fmt.Sprintf("Code%03d", (i+g*250)%1000)
				l, err := s.Resolve(ctx, code)
				if err != nil || l.Code != code {
					t.Errorf("Resolve(%s) = %+v, %v", code, l, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := s.cache.len(); n > 100 {
		t.Fatalf("cache holds %d entries, bound 100", n)
	}
	// A link just resolved is served from the cache.
	if _, err := s.Resolve(ctx, "Code500"); err != nil {
		t.Fatal(err)
	}
	before := st.count()
	if _, err := s.Resolve(ctx, "Code500"); err != nil {
		t.Fatal(err)
	}
	if st.count() != before {
		t.Fatal("the most recently used link was not cached")
	}
}

// A cached link past CacheTTL is still served while the store fails, for
// CacheStaleIfError more; never when the store answers that it is gone,
// and not at all when CacheStaleIfError is negative.
func TestCacheServesStaleWhileTheStoreFails(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		staleIfError time.Duration
		wantStale    bool
	}{{0, true}, {-1, false}} {
		clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
		st := newCountingStore()
		st.set("Stale12", "https://example.com/s")
		s, _ := New(st, Options{CacheSize: 10, CacheTTL: time.Minute, CacheStaleIfError: tc.staleIfError, Now: clock.now})
		if _, err := s.Resolve(ctx, "Stale12"); err != nil {
			t.Fatal(err)
		}
		clock.add(time.Minute)
		st.fail = errors.New("connection refused")
		l, err := s.Resolve(ctx, "Stale12")
		if tc.wantStale && (err != nil || l.URL != "https://example.com/s") {
			t.Fatalf("stale-if-error %v: Resolve with the store failing = %+v, %v; want the cached link", tc.staleIfError, l, err)
		}
		if !tc.wantStale && err == nil {
			t.Fatalf("stale-if-error %v: a stale link was served", tc.staleIfError)
		}
		if !tc.wantStale {
			continue
		}
		clock.add(DefaultCacheStaleIfError)
		if _, err := s.Resolve(ctx, "Stale12"); err == nil {
			t.Fatal("served past CacheTTL + CacheStaleIfError")
		}
		clock.add(-time.Second)
		st.fail = nil
		delete(st.links, "Stale12") // deleted on another replica
		if _, err := s.Resolve(ctx, "Stale12"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a deleted link's stale entry: %v, want ErrNotFound", err)
		}
	}
}

// TestCacheSwitch: the cache is turned on by Options.Cache, with
// DefaultCacheSize when CacheSize is 0 (zero is the default, not "off"),
// or as before by a CacheSize above 0; the zero Options have none.
func TestCacheSwitch(t *testing.T) {
	for _, tc := range []struct {
		o        Options
		wantHalf int // 0: no cache
	}{
		{Options{}, 0},
		{Options{Cache: true}, DefaultCacheSize / 2},
		{Options{Cache: true, CacheSize: 10}, 5},
		{Options{CacheSize: 10}, 5},
	} {
		s, err := New(newCountingStore(), tc.o)
		if err != nil {
			t.Fatal(err)
		}
		half := 0
		if s.cache != nil {
			half = s.cache.half
		}
		if half != tc.wantHalf {
			t.Errorf("Options{Cache: %v, CacheSize: %d}: cache of %d entries a generation, want %d", tc.o.Cache, tc.o.CacheSize, half, tc.wantHalf)
		}
	}
}
