package shortener

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/jsondoc"
	"github.com/idp-proxy/idp-proxy/internal/problem"
)

// statsResource is GET /links/{code}/stats.
type statsResource struct {
	ShortCode string    `json:"short_code"`
	From      time.Time `json:"from"`
	To        time.Time `json:"to"`
	By        string    `json:"by"`
	// Visits counts every visit in the range, HumanVisits those of
	// people, BotVisits those of bots.
	Visits      int64         `json:"visits"`
	HumanVisits int64         `json:"human_visits"`
	BotVisits   int64         `json:"bot_visits"`
	Series      []statsBucket `json:"series"`
	Referrers   []statsCount  `json:"referrers"`
	Devices     []statsCount  `json:"devices"`
	Browsers    []statsCount  `json:"browsers"`
	Countries   []statsCount  `json:"countries"`
}

type statsBucket struct {
	Start     time.Time `json:"start"`
	Visits    int64     `json:"visits"`
	BotVisits int64     `json:"bot_visits"`
}

type statsCount struct {
	Value  string `json:"value"`
	Visits int64  `json:"visits"`
}

// parseStatsQuery reads from, to (RFC 3339 date-times, or dates such as
// 2031-03-10 meaning their UTC midnight) and by (day or hour); a
// parameter appears at most once; others are refused. It returns a
// user-facing detail on error.
func parseStatsQuery(r *http.Request) (StatsQuery, string) {
	var q StatsQuery
	vals, err := queryOf(r)
	if err != nil {
		return q, "the query string cannot be parsed"
	}
	for k, vs := range vals {
		if len(vs) != 1 {
			return q, "the query parameter " + strconv.Quote(truncate(k, 64)) + " appears more than once"
		}
		v := vs[0]
		switch k {
		case "by":
			switch v {
			case "day":
			case "hour":
				q.ByHour = true
			default:
				return q, "invalid by: must be day or hour"
			}
		case "from", "to":
			t, ok := parseStatsTime(v)
			if !ok {
				return q, "invalid " + k + ": must be an RFC 3339 date-time such as 2031-03-10T00:00:00Z or a date such as 2031-03-10"
			}
			if k == "from" {
				q.From = t
			} else {
				q.To = t
			}
		default:
			return q, "unknown query parameter " + strconv.Quote(truncate(k, 64)) + "; known: from, to, by"
		}
	}
	return q, ""
}

// parseStatsTime reads an RFC 3339 date-time or a date, between the years
// 2000 and 9999.
func parseStatsTime(v string) (time.Time, bool) {
	if len(v) > 64 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		if t, err = time.Parse(time.DateOnly, v); err != nil {
			return time.Time{}, false
		}
	}
	t = t.UTC()
	if t.Year() < 2000 || t.Year() > 9998 {
		return time.Time{}, false
	}
	return t, true
}

// serveStats answers GET /links/{code}/stats.
func (h *Handler) serveStats(w http.ResponseWriter, r *http.Request, c Caller) {
	q, detail := parseStatsQuery(r)
	if detail != "" {
		problem.Write(w, http.StatusBadRequest, detail)
		return
	}
	code := r.PathValue("code")
	q, st, err := h.svc.Stats(r.Context(), code, c, q)
	if err != nil {
		if ie, ok := errors.AsType[*InputError](err); ok {
			problem.Write(w, http.StatusBadRequest, "invalid "+ie.Field+": "+ie.Reason)
			return
		}
		if errors.Is(err, ErrStatsOff) {
			problem.Write(w, http.StatusNotFound, "visit statistics are not enabled on this service")
			return
		}
		h.writeLinkError(w, r, err)
		return
	}
	jsondoc.Write(w, http.StatusOK, statsOf(code, q, st), jsondoc.Options{RawHTML: true})
}

// statsOf makes the resource: a dense series (every bucket of the range,
// zeros included) and the totals.
func statsOf(code string, q StatsQuery, st VisitStats) statsResource {
	res := statsResource{ShortCode: code, From: q.From, To: q.To, By: "day"}
	size := 24 * time.Hour
	if q.ByHour {
		res.By, size = "hour", time.Hour
	}
	i := 0
	for t := q.From; t.Before(q.To); t = t.Add(size) {
		b := statsBucket{Start: t}
		for i < len(st.Series) && st.Series[i].Start.Before(t.Add(size)) {
			if !st.Series[i].Start.Before(t) {
				b.Visits += st.Series[i].Total
				b.BotVisits += st.Series[i].Bots
			}
			i++
		}
		res.Visits += b.Visits
		res.BotVisits += b.BotVisits
		res.Series = append(res.Series, b)
	}
	res.HumanVisits = res.Visits - res.BotVisits
	conv := func(cs []Count) []statsCount {
		out := make([]statsCount, len(cs))
		for i, c := range cs {
			out[i] = statsCount(c)
		}
		return out
	}
	res.Referrers, res.Devices, res.Browsers, res.Countries = conv(st.Referrers), conv(st.Devices), conv(st.Browsers), conv(st.Countries)
	return res
}
