package shortener

import (
	"context"
	"time"
)

// VisitEvent is one redirect as the visit statistics keep it: no IP
// address, no User-Agent, no cookie, no query string, no referrer path.
type VisitEvent struct {
	// Code is the link's code.
	Code string
	// At is when the redirect was served, to the second, in UTC.
	At time.Time
	// ReferrerHost is the host of the Referer header, lower case; "" when
	// there was none.
	ReferrerHost string
	// Device is the device class (visitinfo.Device*).
	Device string
	// Browser is the browser family, lower case, or "other".
	Browser string
	// Country is the ISO 3166-1 alpha-2 code of the client's address
	// (with a GeoIP database), or "".
	Country string
	// Bot reports a crawler, link-preview fetcher or HTTP library.
	Bot bool
	// Count is the number of visits this event stands for: the Service
	// writes the visits of one link in one second with the same
	// dimensions as one event. [0 counts as 1]
	Count int64
}

// Visits is e.Count, or 1 when it is 0.
func (e *VisitEvent) Visits() int64 { return max(e.Count, 1) }

// StatsQuery selects the visits of one link: From (inclusive) to To
// (exclusive), in buckets of a day (UTC) or, with ByHour, an hour.
type StatsQuery struct {
	From, To time.Time
	ByHour   bool
}

// StatsBucket is the number of visits in one bucket of a StatsQuery.
type StatsBucket struct {
	// Start is the start of the bucket.
	Start time.Time
	// Total counts every visit, Bots those of bots.
	Total, Bots int64
}

// Count is one value of a breakdown and its visits.
type Count struct {
	Value  string
	Visits int64
}

// VisitStats are the statistics of one link over a StatsQuery.
type VisitStats struct {
	// Series has the buckets that hold visits, in time order.
	Series []StatsBucket
	// The breakdowns count visits of people (not bots), most visits
	// first, at most MaxBreakdown values each ("" is none or unknown).
	Referrers, Devices, Browsers, Countries []Count
}

// MaxBreakdown bounds the values of each breakdown of VisitStats.
const MaxBreakdown = 100

// VisitStatsStore is the optional Store capability that keeps per-visit
// statistics (Options.VisitStats). The stores of this module implement
// it.
//
// Raw visits (RecordVisits) are kept until PruneVisits drops them; their
// daily aggregates, updated by RecordVisits in the same write, are kept
// until the link is deleted (Delete removes both).
type VisitStatsStore interface {
	// RecordVisits stores the events (each standing for Visits() visits)
	// and adds them to the daily aggregates, atomically, in one write
	// where the backend allows. Events of codes without a link are
	// dropped. A batch whose ctx carries an ID (VisitBatchFrom) that the
	// store has recorded is not written again. The events are not kept
	// after the call.
	RecordVisits(ctx context.Context, events []VisitEvent) error
	// PruneVisits drops the raw visits before t (not the aggregates).
	PruneVisits(ctx context.Context, before time.Time) error
	// VisitStats answers q for the link of code: by day from the daily
	// aggregates, by hour from the raw visits. An unknown code gives
	// empty statistics.
	VisitStats(ctx context.Context, code string, q StatsQuery) (VisitStats, error)
}
