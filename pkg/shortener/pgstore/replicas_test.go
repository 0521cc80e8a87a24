package pgstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/pgtest"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// replicas opens n stores (n connection pools, as n processes would) on
// one fresh schema, each with a Service in front.
func replicas(t *testing.T, n int) ([]*shortener.Service, []http.Handler) {
	t.Helper()
	return replicasWith(t, n, shortener.Options{})
}

// replicasWith is replicas with options (BaseURL, CacheSize and
// VisitFlushInterval are set when zero).
func replicasWith(t *testing.T, n int, o shortener.Options) ([]*shortener.Service, []http.Handler) {
	t.Helper()
	if o.BaseURL == "" {
		o.BaseURL = "https://sho.rt"
	}
	if o.CacheSize == 0 {
		o.CacheSize = 1000
	}
	if o.VisitFlushInterval == 0 {
		o.VisitFlushInterval = time.Hour
	}
	dsn, _ := schemaDSN(t)
	dsn = pgtest.WithParam(t, dsn, "pool_max_conns", "8")
	svcs := make([]*shortener.Service, n)
	hs := make([]http.Handler, n)
	for i := range n {
		st := open(t, dsn)
		svc, err := shortener.New(st, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = svc.Close(context.Background()); _ = st.Close() })
		h, err := shortener.NewHandler(svc, shortener.HandlerOptions{Owner: shortener.OwnerFromHeader("X-User")})
		if err != nil {
			t.Fatal(err)
		}
		svcs[i], hs[i] = svc, h
	}
	return svcs, hs
}

// TestMaxVisitsExactAcrossReplicas: many goroutines on three replicas
// redirect one limited link; exactly max_visits redirects succeed.
func TestMaxVisitsExactAcrossReplicas(t *testing.T) {
	svcs, hs := replicas(t, 3)
	const limit, perReplica, each = 50, 12, 8
	l, err := svcs[0].Create(t.Context(), shortener.NewLink{URL: "https://example.com/limited", MaxVisits: limit})
	if err != nil {
		t.Fatal(err)
	}
	var found, gone, other atomic.Int64
	var wg sync.WaitGroup
	for _, h := range hs {
		for range perReplica {
			wg.Go(func() {
				for range each {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, httptest.NewRequest("GET", "/"+l.Code, nil))
					switch rec.Code {
					case http.StatusFound:
						found.Add(1)
					case http.StatusGone:
						gone.Add(1)
					default:
						other.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	total := int64(len(hs) * perReplica * each)
	if found.Load() != limit || gone.Load() != total-limit || other.Load() != 0 {
		t.Fatalf("%d redirects, %d gone, %d other; want %d, %d, 0", found.Load(), gone.Load(), other.Load(), limit, total-limit)
	}
	got, err := svcs[2].Resolve(t.Context(), l.Code)
	if err != nil || got.Visits != limit {
		t.Fatalf("stored visits %d (%v), want %d", got.Visits, err, limit)
	}
}

// TestVisitCountsFromReplicasAddUp: visits counted in memory on several
// replicas all reach the store.
func TestVisitCountsFromReplicasAddUp(t *testing.T) {
	svcs, hs := replicas(t, 3)
	l, err := svcs[0].Create(t.Context(), shortener.NewLink{URL: "https://example.com/popular"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, h := range hs {
		wg.Go(func() {
			for range 40 {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", "/"+l.Code, nil))
				if rec.Code != http.StatusFound {
					t.Errorf("redirect: %d", rec.Code)
				}
			}
		})
	}
	wg.Wait()
	for _, svc := range svcs {
		if err := svc.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	ls, _, err := svcs[0].List(t.Context(), "nobody", shortener.Cursor{}, 10)
	if err != nil || len(ls) != 0 {
		t.Fatalf("List = %v, %v", ls, err)
	}
	got, err := svcs[1].LinkFor(t.Context(), l.Code, shortener.Caller{ID: "root", Admin: true})
	if err != nil || got.Visits != 120 {
		t.Fatalf("visits %d (%v), want 120", got.Visits, err)
	}
}

// replicaOptions are options with a clock and a cache TTL.
func replicaOptions(now func() time.Time, ttl time.Duration) shortener.Options {
	return shortener.Options{Now: now, CacheTTL: ttl}
}
