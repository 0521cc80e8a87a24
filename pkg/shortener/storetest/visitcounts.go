package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// testVisitStatsCounted records events that stand for several visits
// each (VisitEvent.Count, as the Service aggregates them), alongside
// single ones, and checks that daily and hourly statistics count every
// visit, and that pruning drops an aggregate with its hour.
func testVisitStatsCounted(t *testing.T, s shortener.Store) {
	vs := s
	ctx := context.Background()
	mustCreate(t, s, shortener.Link{Code: "count01", URL: "https://example.com/", CreatedAt: at(1)})
	h := time.Hour
	counted := func(e shortener.VisitEvent, n int64) shortener.VisitEvent { e.Count = n; return e }
	events := []shortener.VisitEvent{
		counted(ev("count01", day0.Add(2*h+5*time.Second), "news.example", "desktop", "firefox", "DE", false), 40),
		ev("count01", day0.Add(2*h+5*time.Second), "news.example", "desktop", "firefox", "DE", false),
		counted(ev("count01", day0.Add(2*h+9*time.Second), "", "mobile", "safari", "JP", false), 7),
		counted(ev("count01", day0.Add(2*h+9*time.Second), "", "bot", "other", "", true), 3),
		counted(ev("count01", day0.Add(5*h), "mail.example", "desktop", "chrome", "", false), 2),
	}
	if err := vs.WriteVisits(ctx, shortener.VisitBatch{Events: events}); err != nil {
		t.Fatal(err)
	}
	want := shortener.VisitStats{
		Series:    []shortener.StatsBucket{{Start: day0, Total: 53, Bots: 3}},
		Referrers: []shortener.Count{{Value: "news.example", Visits: 41}, {Value: "", Visits: 7}, {Value: "mail.example", Visits: 2}},
		Devices:   []shortener.Count{{Value: "desktop", Visits: 43}, {Value: "mobile", Visits: 7}},
		Browsers:  []shortener.Count{{Value: "firefox", Visits: 41}, {Value: "safari", Visits: 7}, {Value: "chrome", Visits: 2}},
		Countries: []shortener.Count{{Value: "DE", Visits: 41}, {Value: "JP", Visits: 7}, {Value: "", Visits: 2}},
	}
	checkStats(t, "counted, by day", mustStats(t, vs, "count01", shortener.StatsQuery{From: day0, To: day0.Add(24 * h)}), want)
	want.Series = []shortener.StatsBucket{{Start: day0.Add(2 * h), Total: 51, Bots: 3}, {Start: day0.Add(5 * h), Total: 2}}
	checkStats(t, "counted, by hour", mustStats(t, vs, "count01", shortener.StatsQuery{From: day0, To: day0.Add(24 * h), ByHour: true}), want)

	// Pruning at 3:00 drops the aggregates of 2:00, keeps the rest.
	if err := vs.PruneVisits(ctx, day0.Add(3*h)); err != nil {
		t.Fatal(err)
	}
	st := mustStats(t, vs, "count01", shortener.StatsQuery{From: day0, To: day0.Add(24 * h), ByHour: true})
	if wantSeries := (shortener.StatsBucket{Start: day0.Add(5 * h), Total: 2}); len(st.Series) != 1 || st.Series[0] != wantSeries {
		t.Fatalf("hourly series after pruning: %+v, want [%+v]", st.Series, wantSeries)
	}
}

// testWriteVisitsCountsAndEvents writes one batch with both visit counts
// and statistics, as the Service does once per flush interval: both are
// applied, those of a code without a link ignored.
func testWriteVisitsCountsAndEvents(t *testing.T, s shortener.Store) {
	ctx := context.Background()
	mustCreate(t, s, shortener.Link{Code: "both001", URL: "https://example.com/", CreatedAt: at(1)})
	e := ev("both001", day0.Add(time.Hour), "news.example", "desktop", "firefox", "DE", false)
	e.Count = 4
	missing := e
	missing.Code = "gone001"
	b := shortener.VisitBatch{
		Counts: map[string]int64{"both001": 4, "gone001": 2},
		Events: []shortener.VisitEvent{e, missing},
	}
	if err := s.WriteVisits(ctx, b); err != nil {
		t.Fatal(err)
	}
	if l, err := s.Get(ctx, "both001"); err != nil || l.Visits != 4 {
		t.Errorf("after the batch: %+v, %v; want 4 visits", l, err)
	}
	if _, err := s.Get(ctx, "gone001"); !errors.Is(err, shortener.ErrNotFound) {
		t.Errorf("Get of a code only in the batch: %v, want ErrNotFound", err)
	}
	st := mustStats(t, s, "both001", shortener.StatsQuery{From: day0, To: day0.Add(24 * time.Hour)})
	if want := []shortener.StatsBucket{{Start: day0, Total: 4}}; !reflect.DeepEqual(st.Series, want) {
		t.Errorf("series after the batch: %+v, want %+v", st.Series, want)
	}
	if st := mustStats(t, s, "gone001", shortener.StatsQuery{From: day0, To: day0.Add(24 * time.Hour)}); len(st.Series) != 0 {
		t.Errorf("statistics of a code without a link: %+v", st.Series)
	}
}
