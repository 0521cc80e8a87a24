package pgstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/faultnet"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// inflightStore counts the calls that reach PostgreSQL at the same time.
type inflightStore struct {
	shortener.Store
	mu       sync.Mutex
	inflight int
	peak     int
}

func (s *inflightStore) enter() func() {
	s.mu.Lock()
	s.inflight++
	s.peak = max(s.peak, s.inflight)
	s.mu.Unlock()
	return func() { s.mu.Lock(); s.inflight--; s.mu.Unlock() }
}

// resetPeak starts a new count from the calls under way now.
func (s *inflightStore) resetPeak()   { s.mu.Lock(); s.peak = s.inflight; s.mu.Unlock() }
func (s *inflightStore) peakNow() int { s.mu.Lock(); defer s.mu.Unlock(); return s.peak }

func (s *inflightStore) Get(ctx context.Context, code string) (shortener.Link, error) {
	defer s.enter()()
	return s.Store.Get(ctx, code)
}

func (s *inflightStore) Ping(ctx context.Context) error {
	defer s.enter()()
	return s.Store.Ping(ctx)
}

// TestRedirectsThroughAFrozenPostgres: PostgreSQL frozen under one replica
// (its connections black-holed) while another still reaches it. The links
// the frozen replica served recently keep redirecting, from its cache;
// once a call has run out of the store timeout, no request waits for the
// store but the one probe; the stale links stop at CacheTTL +
// CacheStaleIfError; after the thaw the replica serves the store's
// current state (the edit and the deletion made meanwhile).
func TestRedirectsThroughAFrozenPostgres(t *testing.T) {
	const ttl, stale = 5 * time.Second, time.Minute
	dsn, _ := schemaDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	fp := faultnet.New(t, u.Host)
	u.Host = fp.Addr()
	st := &inflightStore{Store: open(t, u.String())}
	clock := &raceClock{t: time.Now().UTC()}
	svc, err := shortener.New(st, shortener.Options{
		BaseURL: "https://sho.rt", CacheSize: 1000, CacheTTL: ttl, CacheStaleIfError: stale,
		StoreTimeout: 200 * time.Millisecond, Now: clock.now, VisitFlushInterval: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := shortener.NewHandler(svc, shortener.HandlerOptions{Owner: shortener.OwnerFromHeader("X-User")})
	if err != nil {
		t.Fatal(err)
	}
	// The other replica reaches PostgreSQL directly.
	other := open(t, dsn)
	osvc, err := shortener.New(other, shortener.Options{BaseURL: "https://sho.rt"})
	if err != nil {
		t.Fatal(err)
	}
	oh, err := shortener.NewHandler(osvc, shortener.HandlerOptions{Owner: shortener.OwnerFromHeader("X-User")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fp.Thaw()
		_ = svc.Close(context.Background())
		_ = st.Close()
		_ = osvc.Close(context.Background())
		_ = other.Close()
	})

	create := func(path string) string {
		t.Helper()
		rec := httptest.NewRecorder()
		oh.ServeHTTP(rec, jsonRequest("POST", "/links", `{"url":"https://example.com/`+path+`"}`))
		if rec.Code != http.StatusCreated {
			t.Fatalf("create: %d %s", rec.Code, rec.Body)
		}
		return strings.TrimPrefix(rec.Header().Get("Location"), "https://sho.rt/links/")
	}
	get := func(code string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/"+code, nil))
		return rec
	}
	hot, deleted, cold := create("hot-v1"), create("deleted"), create("cold")
	for _, code := range []string{hot, deleted} {
		if rec := get(code); rec.Code != http.StatusFound {
			t.Fatalf("GET before the freeze: %d %s", rec.Code, rec.Body)
		}
	}

	fp.Freeze()
	clock.add(ttl) // the cached entries are stale from now on
	// Meanwhile, on the replica that reaches PostgreSQL: an edit, a deletion.
	rec := httptest.NewRecorder()
	oh.ServeHTTP(rec, jsonRequest("PATCH", "/links/"+hot, `{"url":"https://example.com/hot-v2"}`))
	if rec.Code != http.StatusOK {
		t.Fatalf("PATCH on the other replica: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	oh.ServeHTTP(rec, jsonRequest("DELETE", "/links/"+deleted, ""))
	if rec.Code != http.StatusNoContent {
		t.Fatalf("DELETE on the other replica: %d %s", rec.Code, rec.Body)
	}

	// The first request finds out: it waits for the store timeout, then
	// is served from the cache.
	if rec := get(hot); rec.Code != http.StatusFound || rec.Header().Get("Location") != "https://example.com/hot-v1" {
		t.Fatalf("first GET of a cached link with PostgreSQL frozen: %d %q %s", rec.Code, rec.Header().Get("Location"), rec.Body)
	}

	// burst sends n GETs of code from 8 goroutines and counts answers.
	burst := func(code string, n int) map[int]int {
		var mu sync.Mutex
		out := map[int]int{}
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := g; i < n; i += 8 {
					rec := get(code)
					mu.Lock()
					out[rec.Code]++
					mu.Unlock()
					if rec.Code == http.StatusServiceUnavailable &&
						(!strings.Contains(rec.Body.String(), "the link store is unavailable") || rec.Header().Get("Retry-After") == "") {
						t.Errorf("503 without naming the store: %s", rec.Body)
					}
				}
			})
		}
		wg.Wait()
		return out
	}
	st.resetPeak()
	for _, code := range []string{hot, deleted} {
		if got := burst(code, 400); got[http.StatusFound] != 400 {
			t.Errorf("GET of a link cached before the freeze: %v, want 400 × 302", got)
		}
	}
	if got := burst(cold, 80); got[http.StatusServiceUnavailable] != 80 {
		t.Errorf("GET of a link never cached: %v, want 80 × 503", got)
	}
	if p := st.peakNow(); p > 1 {
		t.Errorf("%d calls waited on the frozen store at once; want at most one probe", p)
	}

	// The staleness bound: CacheTTL + CacheStaleIfError after the read.
	clock.add(stale)
	if got := burst(hot, 16); got[http.StatusServiceUnavailable] != 16 {
		t.Errorf("GET past CacheTTL + CacheStaleIfError: %v, want 16 × 503", got)
	}

	// After the thaw: the edit and the deletion, once the probe has seen
	// the store answer.
	fp.Thaw()
	clock.add(-stale) // the entries are stale again, not gone
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec := get(cold)
		if rec.Code == http.StatusFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET after the thaw: %d %s", rec.Code, rec.Body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if rec := get(hot); rec.Code != http.StatusFound || rec.Header().Get("Location") != "https://example.com/hot-v2" {
		t.Errorf("GET of the edited link after the thaw: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	if rec := get(deleted); rec.Code != http.StatusNotFound {
		t.Errorf("GET of the deleted link after the thaw: %d %s", rec.Code, rec.Body)
	}
}
