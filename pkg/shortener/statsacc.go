package shortener

import (
	"cmp"
	"slices"
	"time"
)

// StatsAccumulator folds visits, or aggregates of them, into VisitStats:
// for stores that compute statistics in Go. The zero value is not usable;
// call NewStatsAccumulator.
type StatsAccumulator struct {
	byHour                     bool
	series                     map[int64]*StatsBucket
	ref, dev, browser, country map[string]int64
}

// NewStatsAccumulator returns an accumulator for q's bucket size.
func NewStatsAccumulator(q StatsQuery) *StatsAccumulator {
	return &StatsAccumulator{
		byHour: q.ByHour, series: map[int64]*StatsBucket{},
		ref: map[string]int64{}, dev: map[string]int64{}, browser: map[string]int64{}, country: map[string]int64{},
	}
}

// BucketStart returns the start of the bucket of t: its UTC day, or with
// byHour its hour.
func BucketStart(t time.Time, byHour bool) time.Time {
	if byHour {
		return t.UTC().Truncate(time.Hour)
	}
	return t.UTC().Truncate(24 * time.Hour)
}

// Add counts n visits like e (its At placing them in a bucket).
func (a *StatsAccumulator) Add(e VisitEvent, n int64) {
	start := BucketStart(e.At, a.byHour)
	b := a.series[start.Unix()]
	if b == nil {
		b = &StatsBucket{Start: start}
		a.series[start.Unix()] = b
	}
	b.Total += n
	if e.Bot {
		b.Bots += n
		return
	}
	a.ref[e.ReferrerHost] += n
	a.dev[e.Device] += n
	a.browser[e.Browser] += n
	a.country[e.Country] += n
}

// Result returns the statistics added so far.
func (a *StatsAccumulator) Result() VisitStats {
	var st VisitStats
	for _, b := range a.series {
		st.Series = append(st.Series, *b)
	}
	slices.SortFunc(st.Series, func(x, y StatsBucket) int { return x.Start.Compare(y.Start) })
	st.Referrers, st.Devices, st.Browsers, st.Countries = topCounts(a.ref), topCounts(a.dev), topCounts(a.browser), topCounts(a.country)
	return st
}

// topCounts returns the MaxBreakdown values with most visits, most first
// (ties by value).
func topCounts(m map[string]int64) []Count {
	out := make([]Count, 0, len(m))
	for v, n := range m {
		out = append(out, Count{Value: v, Visits: n})
	}
	SortCounts(out)
	if len(out) > MaxBreakdown {
		out = out[:MaxBreakdown]
	}
	return out
}

// SortCounts orders a breakdown: most visits first, ties by value.
func SortCounts(c []Count) {
	slices.SortFunc(c, func(x, y Count) int {
		if r := cmp.Compare(y.Visits, x.Visits); r != 0 {
			return r
		}
		return cmp.Compare(x.Value, y.Value)
	})
}
