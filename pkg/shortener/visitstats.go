package shortener

import (
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
