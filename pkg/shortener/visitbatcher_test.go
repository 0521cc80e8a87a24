package shortener

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// recordingStore is a store that keeps the batches it is given.
type recordingStore struct {
	fakeStore
	mu      sync.Mutex
	batches []VisitBatch
	prunes  []time.Time
}

func (r *recordingStore) PruneVisits(_ context.Context, before time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prunes = append(r.prunes, before)
	return nil
}

func (r *recordingStore) WriteVisits(_ context.Context, b VisitBatch) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	b.Events = append([]VisitEvent(nil), b.Events...)
	r.batches = append(r.batches, b)
	return nil
}

// TestVisitBatcherAggregates: the visits of a link in one second with the
// same User-Agent, Referer and country are one aggregate in memory, added
// to without allocating, and written as one event that counts them all;
// what is written holds the classified dimensions only, in the same
// store call as the link's visit count.
func TestVisitBatcherAggregates(t *testing.T) {
	st := &recordingStore{}
	l := newVisitBatcher(st, time.Hour, true, 30*24*time.Hour, time.Now, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { _ = l.close(context.Background()) })
	const ua = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
	const ref = "https://news.example/path?q=secret"
	at := time.Date(2031, 3, 10, 12, 0, 5, 0, time.UTC).Unix()
	// The first flush classifies the User-Agent and the Referer; from then
	// on redirects find them in the caches.
	v := &Visitor{UserAgent: ua, Referer: ref, Country: "DE"}
	l.add("abc1234", true, v, at)
	if err := l.flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	l.add("abc1234", true, v, at)
	if allocs := testing.AllocsPerRun(1000, func() { l.add("abc1234", true, v, at) }); allocs != 0 {
		t.Errorf("a visit allocates %.1f times", allocs)
	}
	if n := l.aggs.Load(); n != 1 {
		t.Fatalf("%d aggregates in memory for visits of one link, second and dimensions, want 1", n)
	}
	if err := l.flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := VisitEvent{Code: "abc1234", At: time.Unix(at, 0).UTC(), ReferrerHost: "news.example", Device: "desktop", Browser: "firefox", Country: "DE", Count: 1002}
	if len(st.batches) != 2 || len(st.batches[1].Events) != 1 || st.batches[1].Events[0] != want {
		t.Fatalf("batches %+v, want a second one of [%+v]", st.batches, want)
	}
	if n := st.batches[1].Counts["abc1234"]; n != 1002 || len(st.batches[1].Counts) != 1 {
		t.Fatalf("counts of the second batch %v, want abc1234: 1002", st.batches[1].Counts)
	}
	if st.batches[1].ID.IsZero() || st.batches[1].ID == st.batches[0].ID {
		t.Fatalf("batch IDs %x and %x: want two distinct IDs", st.batches[0].ID, st.batches[1].ID)
	}
}

// TestVisitBatcherPrunes: the periodic flush drops raw statistics past
// the retention, at most once an hour; a flush asked for by a request
// (Service.Flush, Service.Edit) does not.
func TestVisitBatcherPrunes(t *testing.T) {
	st := &recordingStore{}
	now := time.Date(2031, 3, 10, 12, 0, 5, 0, time.UTC)
	l := newVisitBatcher(st, time.Hour, true, 30*24*time.Hour, func() time.Time { return now }, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { _ = l.close(context.Background()) })
	v := &Visitor{}
	l.add("abc1234", true, v, now.Unix())
	if err := l.flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(st.prunes) != 0 {
		t.Fatalf("a requested flush pruned: %v", st.prunes)
	}
	l.add("abc1234", true, v, now.Unix())
	l.onTimer()
	now = now.Add(59 * time.Minute)
	l.add("abc1234", true, v, now.Unix())
	l.onTimer()
	if want := []time.Time{time.Date(2031, 2, 8, 12, 0, 5, 0, time.UTC)}; len(st.prunes) != 1 || !st.prunes[0].Equal(want[0]) {
		t.Fatalf("prunes %v, want %v (once within the hour)", st.prunes, want)
	}
	now = now.Add(time.Minute)
	l.add("abc1234", true, v, now.Unix())
	l.onTimer()
	if len(st.prunes) != 2 {
		t.Fatalf("prunes %v, want a second one an hour after the first", st.prunes)
	}
}
