package shortener_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/memstore"
)

// batchSpy is a memstore that keeps a copy of every batch of visits it
// is given.
type batchSpy struct {
	*memstore.Store
	mu      sync.Mutex
	batches []shortener.VisitBatch
}

func (s *batchSpy) WriteVisits(ctx context.Context, b shortener.VisitBatch) error {
	s.mu.Lock()
	c := shortener.VisitBatch{ID: b.ID, Counts: map[string]int64{}, Events: append([]shortener.VisitEvent(nil), b.Events...)}
	for k, v := range b.Counts {
		c.Counts[k] = v
	}
	s.batches = append(s.batches, c)
	s.mu.Unlock()
	return s.Store.WriteVisits(ctx, b)
}

// TestServiceVisitRecordsStatistic: a Go caller of Service.Visit, not
// only the HTTP handler, records the visit's statistic with its count.
func TestServiceVisitRecordsStatistic(t *testing.T) {
	now := time.Date(2031, 3, 10, 12, 0, 5, 0, time.UTC)
	svc := newService(t, memstore.New(), shortener.Options{VisitStats: true, VisitFlushInterval: time.Hour, Now: func() time.Time { return now }})
	ctx := t.Context()
	l, err := svc.Create(ctx, shortener.NewLink{URL: "https://example.com/", Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Visit(ctx, l.Code, shortener.Visitor{UserAgent: uaFirefox, Referer: "https://news.example/a", Country: "DE"}); err != nil {
		t.Fatal(err)
	}
	if err := svc.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	_, st, err := svc.Stats(ctx, l.Code, shortener.Caller{ID: "alice"}, shortener.StatsQuery{})
	if err != nil {
		t.Fatal(err)
	}
	want := shortener.VisitStats{
		Series:    []shortener.StatsBucket{{Start: shortener.BucketStart(now, false), Total: 1}},
		Referrers: []shortener.Count{{Value: "news.example", Visits: 1}},
		Devices:   []shortener.Count{{Value: "desktop", Visits: 1}},
		Browsers:  []shortener.Count{{Value: "firefox", Visits: 1}},
		Countries: []shortener.Count{{Value: "DE", Visits: 1}},
	}
	if len(st.Series) != 1 || st.Series[0] != want.Series[0] || st.Referrers[0] != want.Referrers[0] ||
		st.Devices[0] != want.Devices[0] || st.Browsers[0] != want.Browsers[0] || st.Countries[0] != want.Countries[0] {
		t.Fatalf("statistics after Service.Visit: %+v, want %+v", st, want)
	}
	if got, err := svc.LinkFor(ctx, l.Code, shortener.Caller{ID: "alice"}); err != nil || got.Visits != 1 {
		t.Fatalf("link after Service.Visit: %+v, %v; want 1 visit", got, err)
	}
}

// TestRedirectWritesOneBatch: the redirects of a flush interval, with
// statistics on, reach the store in one call carrying both the visit
// counts and the statistics; a HEAD request records neither.
func TestRedirectWritesOneBatch(t *testing.T) {
	st := &batchSpy{Store: memstore.New()}
	now := time.Date(2031, 3, 10, 12, 0, 5, 0, time.UTC) // one second: one aggregate
	svc := newService(t, st, shortener.Options{VisitStats: true, VisitFlushInterval: time.Hour, Now: func() time.Time { return now }})
	h := newHandler(t, svc, shortener.HandlerOptions{})
	ctx := t.Context()
	l, err := svc.Create(ctx, shortener.NewLink{URL: "https://example.com/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{"GET", "GET", "HEAD"} {
		req := httptest.NewRequest(method, "/"+l.Code, nil)
		req.Header.Set("User-Agent", uaFirefox)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusFound {
			t.Fatalf("%s /%s: %d", method, l.Code, rec.Code)
		}
	}
	if err := svc.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if len(st.batches) != 1 {
		t.Fatalf("%d store calls for the visits of one interval, want 1: %+v", len(st.batches), st.batches)
	}
	b := st.batches[0]
	if b.Counts[l.Code] != 2 || len(b.Events) != 1 || b.Events[0].Visits() != 2 {
		t.Fatalf("batch %+v: want 2 visits counted and one event of 2 visits", b)
	}
}
