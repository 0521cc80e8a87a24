package shortener

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// recordingStats is a VisitStatsStore that keeps the batches it is given.
type recordingStats struct {
	mu      sync.Mutex
	batches [][]VisitEvent
}

func (r *recordingStats) RecordVisits(_ context.Context, events []VisitEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, append([]VisitEvent(nil), events...))
	return nil
}
func (r *recordingStats) PruneVisits(context.Context, time.Time) error { return nil }
func (r *recordingStats) VisitStats(context.Context, string, StatsQuery) (VisitStats, error) {
	return VisitStats{}, nil
}

// TestVisitLogAggregates: the visits of a link in one second with the
// same User-Agent, Referer and country are one aggregate in memory, added
// to without allocating, and written as one event that counts them all;
// what is written holds the classified dimensions only.
func TestVisitLogAggregates(t *testing.T) {
	st := &recordingStats{}
	l := newVisitLog(st, time.Hour, 30*24*time.Hour, time.Now, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { _ = l.close(context.Background()) })
	const ua = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
	const ref = "https://news.example/path?q=secret"
	at := time.Date(2031, 3, 10, 12, 0, 5, 0, time.UTC).Unix()
	// The first flush classifies the User-Agent and the Referer; from then
	// on redirects find them in the caches.
	l.add("abc1234", ua, ref, "DE", at)
	if err := l.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.add("abc1234", ua, ref, "DE", at)
	if allocs := testing.AllocsPerRun(1000, func() { l.add("abc1234", ua, ref, "DE", at) }); allocs != 0 {
		t.Errorf("a visit allocates %.1f times", allocs)
	}
	if n := l.pending.Load(); n != 1 {
		t.Fatalf("%d aggregates in memory for visits of one link, second and dimensions, want 1", n)
	}
	if err := l.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := VisitEvent{Code: "abc1234", At: time.Unix(at, 0).UTC(), ReferrerHost: "news.example", Device: "desktop", Browser: "firefox", Country: "DE", Count: 1002}
	if len(st.batches) != 2 || len(st.batches[1]) != 1 || st.batches[1][0] != want {
		t.Fatalf("batches %+v, want a second one of [%+v]", st.batches, want)
	}
}
