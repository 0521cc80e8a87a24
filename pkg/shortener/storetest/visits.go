package storetest

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

var day0 = time.Date(2031, 3, 10, 0, 0, 0, 0, time.UTC)

func ev(code string, at time.Time, ref, device, browser, country string, bot bool) shortener.VisitEvent {
	return shortener.VisitEvent{Code: code, At: at, ReferrerHost: ref, Device: device, Browser: browser, Country: country, Bot: bot}
}

func mustStats(t *testing.T, vs shortener.Store, code string, q shortener.StatsQuery) shortener.VisitStats {
	t.Helper()
	st, err := vs.VisitStats(context.Background(), code, q)
	if err != nil {
		t.Fatalf("VisitStats(%q, %+v): %v", code, q, err)
	}
	return st
}

func testVisitStats(t *testing.T, s shortener.Store) {
	vs := s
	ctx := context.Background()
	mustCreate(t, s, shortener.Link{Code: "stats01", URL: "https://example.com/", CreatedAt: at(1)})
	mustCreate(t, s, shortener.Link{Code: "stats02", URL: "https://example.com/", CreatedAt: at(1)})
	h := time.Hour
	events := []shortener.VisitEvent{
		ev("stats01", day0.Add(1*h), "news.example", "desktop", "firefox", "DE", false),
		ev("stats01", day0.Add(1*h+time.Minute), "news.example", "mobile", "safari", "JP", false),
		ev("stats01", day0.Add(3*h), "", "desktop", "firefox", "DE", false),
		ev("stats01", day0.Add(3*h), "", "bot", "other", "", true),
		ev("stats01", day0.Add(26*h), "mail.example", "tablet", "safari", "", false),
		ev("stats02", day0.Add(1*h), "other.example", "desktop", "chrome", "FR", false),
		ev("gone001", day0.Add(1*h), "x.example", "desktop", "chrome", "FR", false), // no such link: dropped
	}
	// In two batches, as two flushes would write them.
	if err := vs.WriteVisits(ctx, shortener.VisitBatch{Events: events[:3]}); err != nil {
		t.Fatal(err)
	}
	if err := vs.WriteVisits(ctx, shortener.VisitBatch{Events: events[3:]}); err != nil {
		t.Fatal(err)
	}
	byDay := mustStats(t, vs, "stats01", shortener.StatsQuery{From: day0, To: day0.Add(48 * h)})
	want := shortener.VisitStats{
		Series:    []shortener.StatsBucket{{Start: day0, Total: 4, Bots: 1}, {Start: day0.Add(24 * h), Total: 1}},
		Referrers: []shortener.Count{{Value: "", Visits: 1}, {Value: "mail.example", Visits: 1}, {Value: "news.example", Visits: 2}},
		Devices:   []shortener.Count{{Value: "desktop", Visits: 2}, {Value: "mobile", Visits: 1}, {Value: "tablet", Visits: 1}},
		Browsers:  []shortener.Count{{Value: "safari", Visits: 2}, {Value: "firefox", Visits: 2}},
		Countries: []shortener.Count{{Value: "DE", Visits: 2}, {Value: "", Visits: 1}, {Value: "JP", Visits: 1}},
	}
	shortener.SortCounts(want.Referrers)
	shortener.SortCounts(want.Browsers)
	checkStats(t, "by day", byDay, want)

	byHour := mustStats(t, vs, "stats01", shortener.StatsQuery{From: day0, To: day0.Add(24 * h), ByHour: true})
	want.Series = []shortener.StatsBucket{{Start: day0.Add(h), Total: 2}, {Start: day0.Add(3 * h), Total: 2, Bots: 1}}
	want.Referrers = []shortener.Count{{Value: "news.example", Visits: 2}, {Value: "", Visits: 1}}
	want.Devices = []shortener.Count{{Value: "desktop", Visits: 2}, {Value: "mobile", Visits: 1}}
	want.Browsers = []shortener.Count{{Value: "firefox", Visits: 2}, {Value: "safari", Visits: 1}}
	want.Countries = []shortener.Count{{Value: "DE", Visits: 2}, {Value: "JP", Visits: 1}}
	checkStats(t, "by hour", byHour, want)

	// Pruning drops raw visits (hourly statistics), not the aggregates.
	if err := vs.PruneVisits(ctx, day0.Add(24*h)); err != nil {
		t.Fatal(err)
	}
	if st := mustStats(t, vs, "stats01", shortener.StatsQuery{From: day0, To: day0.Add(24 * h), ByHour: true}); len(st.Series) != 0 {
		t.Fatalf("hourly series after pruning: %+v", st.Series)
	}
	if st := mustStats(t, vs, "stats01", shortener.StatsQuery{From: day0, To: day0.Add(48 * h)}); !reflect.DeepEqual(st.Series, byDay.Series) {
		t.Fatalf("daily series after pruning: %+v, want %+v", st.Series, byDay.Series)
	}
	// Deleting the link deletes its statistics: a new link of the code
	// starts from none.
	if err := s.Delete(ctx, "stats01", ""); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, shortener.Link{Code: "stats01", URL: "https://example.com/again", CreatedAt: at(2)})
	if st := mustStats(t, vs, "stats01", shortener.StatsQuery{From: day0, To: day0.Add(48 * h)}); len(st.Series) != 0 {
		t.Fatalf("statistics of a deleted link survived: %+v", st)
	}
	if st := mustStats(t, vs, "stats02", shortener.StatsQuery{From: day0, To: day0.Add(48 * h)}); len(st.Series) != 1 || st.Series[0].Total != 1 {
		t.Fatalf("statistics of another link: %+v", st)
	}
	if st := mustStats(t, vs, "unknown", shortener.StatsQuery{From: day0, To: day0.Add(48 * h)}); len(st.Series) != 0 {
		t.Fatalf("statistics of an unknown code: %+v", st)
	}
}

// testVisitStatsBusyBatch records one batch, out of order, in which two
// links have many visits over two hours (a store may group a link's
// visits of a batch), and checks hourly and daily statistics and
// pruning at an hour.
func testVisitStatsBusyBatch(t *testing.T, s shortener.Store) {
	vs := s
	ctx := context.Background()
	mustCreate(t, s, shortener.Link{Code: "busy001", URL: "https://example.com/", CreatedAt: at(1)})
	mustCreate(t, s, shortener.Link{Code: "busy002", URL: "https://example.com/", CreatedAt: at(1)})
	h := time.Hour
	var events []shortener.VisitEvent
	for i := range 60 {
		// busy001: 40 visits in hour 5 (one a bot each 4th, two referrers),
		// 20 in hour 6; busy002: one a minute in hour 5.
		t0 := day0.Add(5*h + time.Duration(i)*time.Minute + 30*time.Second)
		ref := "a.example"
		if i%2 == 1 {
			ref = "b.example"
		}
		if i < 40 {
			events = append(events, ev("busy001", t0, ref, "desktop", "firefox", "DE", i%4 == 0))
		}
		events = append(events, ev("busy002", t0, "", "mobile", "safari", "", false))
		if i < 20 {
			events = append(events, ev("busy001", day0.Add(6*h+time.Duration(i)*time.Second), "", "mobile", "chrome", "FR", false))
		}
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
	if err := vs.WriteVisits(ctx, shortener.VisitBatch{Events: events}); err != nil {
		t.Fatal(err)
	}
	want := shortener.VisitStats{
		Series:    []shortener.StatsBucket{{Start: day0.Add(5 * h), Total: 40, Bots: 10}, {Start: day0.Add(6 * h), Total: 20}},
		Referrers: []shortener.Count{{Value: "b.example", Visits: 20}, {Value: "", Visits: 20}, {Value: "a.example", Visits: 10}},
		Devices:   []shortener.Count{{Value: "desktop", Visits: 30}, {Value: "mobile", Visits: 20}},
		Browsers:  []shortener.Count{{Value: "firefox", Visits: 30}, {Value: "chrome", Visits: 20}},
		Countries: []shortener.Count{{Value: "DE", Visits: 30}, {Value: "FR", Visits: 20}},
	}
	shortener.SortCounts(want.Referrers)
	checkStats(t, "by hour", mustStats(t, vs, "busy001", shortener.StatsQuery{From: day0, To: day0.Add(24 * h), ByHour: true}), want)
	byDay := mustStats(t, vs, "busy001", shortener.StatsQuery{From: day0, To: day0.Add(24 * h)})
	checkStats(t, "by day", byDay, shortener.VisitStats{
		Series:    []shortener.StatsBucket{{Start: day0, Total: 60, Bots: 10}},
		Referrers: want.Referrers, Devices: want.Devices, Browsers: want.Browsers, Countries: want.Countries,
	})
	hour6 := shortener.VisitStats{
		Series:    []shortener.StatsBucket{{Start: day0.Add(6 * h), Total: 20}},
		Referrers: []shortener.Count{{Value: "", Visits: 20}},
		Devices:   []shortener.Count{{Value: "mobile", Visits: 20}},
		Browsers:  []shortener.Count{{Value: "chrome", Visits: 20}},
		Countries: []shortener.Count{{Value: "FR", Visits: 20}},
	}
	checkStats(t, "hour 6", mustStats(t, vs, "busy001", shortener.StatsQuery{From: day0.Add(6 * h), To: day0.Add(7 * h), ByHour: true}), hour6)
	if st := mustStats(t, vs, "busy002", shortener.StatsQuery{From: day0.Add(5 * h), To: day0.Add(6 * h), ByHour: true}); len(st.Series) != 1 || st.Series[0].Total != 60 {
		t.Fatalf("busy002 hour 5: %+v", st.Series)
	}

	if err := vs.PruneVisits(ctx, day0.Add(6*h)); err != nil {
		t.Fatal(err)
	}
	checkStats(t, "by hour after pruning", mustStats(t, vs, "busy001", shortener.StatsQuery{From: day0, To: day0.Add(24 * h), ByHour: true}), hour6)
	if st := mustStats(t, vs, "busy002", shortener.StatsQuery{From: day0, To: day0.Add(24 * h), ByHour: true}); len(st.Series) != 0 {
		t.Fatalf("busy002 hourly after pruning: %+v", st.Series)
	}
	checkStats(t, "by day after pruning", mustStats(t, vs, "busy001", shortener.StatsQuery{From: day0, To: day0.Add(24 * h)}), byDay)
}

func checkStats(t *testing.T, name string, got, want shortener.VisitStats) {
	t.Helper()
	norm := func(c []shortener.Count) []shortener.Count {
		if len(c) == 0 {
			return nil
		}
		return c
	}
	for _, p := range []struct {
		what      string
		got, want []shortener.Count
	}{{"referrers", got.Referrers, want.Referrers}, {"devices", got.Devices, want.Devices}, {"browsers", got.Browsers, want.Browsers}, {"countries", got.Countries, want.Countries}} {
		if !reflect.DeepEqual(norm(p.got), norm(p.want)) {
			t.Errorf("%s: %s = %+v, want %+v", name, p.what, p.got, p.want)
		}
	}
	if len(got.Series) != len(want.Series) {
		t.Fatalf("%s: series %+v, want %+v", name, got.Series, want.Series)
	}
	for i := range got.Series {
		g, w := got.Series[i], want.Series[i]
		if !g.Start.Equal(w.Start) || g.Total != w.Total || g.Bots != w.Bots {
			t.Errorf("%s: series[%d] = %+v, want %+v", name, i, g, w)
		}
	}
}
