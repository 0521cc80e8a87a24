package shortener

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Bounds of a statistics query.
const (
	// MaxStatsDays is the longest range of daily statistics (ten years).
	MaxStatsDays = 3660
	// MaxStatsHours is the longest range of hourly statistics (31 days).
	MaxStatsHours = 31 * 24
)

// ErrStatsOff means that the Service keeps no visit statistics
// (Options.VisitStats is off).
var ErrStatsOff = errors.New("shortener: visit statistics are not enabled")

// Stats returns the visit statistics of the link of code over q when c
// is its creator or an administrator (otherwise ErrNotFound). q's From
// and To are widened to whole buckets; hourly statistics reach back
// Options.VisitRetention at most (an *InputError otherwise). Visits of
// the last flush interval may not be in them yet.
func (s *Service) Stats(ctx context.Context, code string, c Caller, q StatsQuery) (StatsQuery, VisitStats, error) {
	if s.visits.stats == nil {
		return q, VisitStats{}, ErrStatsOff
	}
	if _, err := s.LinkFor(ctx, code, c); err != nil {
		return q, VisitStats{}, err
	}
	q, err := s.normalizeQuery(q)
	if err != nil {
		return q, VisitStats{}, err
	}
	st, err := s.store.VisitStats(ctx, code, q)
	if err != nil {
		return q, VisitStats{}, fmt.Errorf("shortener: visit stats: %w", err)
	}
	return q, st, nil
}

// normalizeQuery fills in the default range (the last 30 days by day,
// the last 24 hours by hour), widens it to whole buckets and checks it.
func (s *Service) normalizeQuery(q StatsQuery) (StatsQuery, error) {
	size := 24 * time.Hour
	if q.ByHour {
		size = time.Hour
	}
	now := s.now().UTC()
	if q.To.IsZero() {
		q.To = now
	}
	if q.From.IsZero() {
		if q.ByHour {
			q.From = q.To.Add(-24 * time.Hour)
		} else {
			q.From = q.To.Add(-30 * 24 * time.Hour)
		}
	}
	q.From = BucketStart(q.From, q.ByHour)
	if end := BucketStart(q.To, q.ByHour); !end.Equal(q.To.UTC()) {
		q.To = end.Add(size)
	} else {
		q.To = end
	}
	if !q.From.Before(q.To) {
		return q, &InputError{Field: "from", Reason: "must be before to"}
	}
	if q.ByHour {
		if q.To.Sub(q.From) > MaxStatsHours*time.Hour {
			return q, &InputError{Field: "to", Reason: "hourly statistics cover at most 31 days; use by=day"}
		}
		if q.From.Before(BucketStart(now.Add(-s.retention), true)) {
			return q, &InputError{Field: "from", Reason: fmt.Sprintf("hourly statistics are kept for %d days; use by=day for older visits", int(s.retention.Hours()/24))}
		}
	} else if q.To.Sub(q.From) > MaxStatsDays*24*time.Hour {
		return q, &InputError{Field: "to", Reason: "daily statistics cover at most 3660 days"}
	}
	return q, nil
}
