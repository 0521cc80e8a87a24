package pgstore_test

import (
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// BenchmarkStats10M: the statistics of one link with 10,000,000 visits
// over a year (about 27,000 a day; 30 referrer hosts, 5 device classes, 8
// browsers, 40 countries, 10 % bots), among the counts the write path
// keeps: daily counts for the year, hourly counts and raw visits for the
// last 30 days (the default retention). The counts are computed in SQL
// from 10M generated visits exactly as WriteVisits folds them (one row
// per bucket and value of each dimension; TestConformance checks that
// fold), which loads in about a minute where 10M visits through WriteVisits would take
// much longer. Reports p50 and p99 of Service.Stats (target: p99 under
// 100 ms) for a year by day, 30 days by day and 7 days by hour.
//
//	TEST_POSTGRES_DSN=... go test -run '^$' -bench Stats10M -benchtime 200x ./pkg/shortener/pgstore/
func BenchmarkStats10M(b *testing.B) {
	dsn, _ := schemaDSN(b)
	st := open(b, dsn)
	defer st.Close()
	ctx := b.Context()
	end := time.Now().UTC().Truncate(24 * time.Hour)
	start := end.AddDate(-1, 0, 0)
	svc, err := shortener.New(st, shortener.Options{VisitStats: true, Now: func() time.Time { return end.Add(-time.Minute) }})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close(ctx)
	l, err := svc.Create(ctx, shortener.NewLink{URL: "https://example.com/popular", Owner: "alice"})
	if err != nil {
		b.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	loadStatsVisits(b, conn, l.Code, start, 10_000_000, false)
	loadStatsVisits(b, conn, l.Code, end.AddDate(0, 0, -30), 10_000_000*30/365, true)
	// As autovacuum leaves a table of past days: analysed, and its pages
	// marked all-visible (index-only scans).
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE shortener_visit_counts`); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE shortener_visits`); err != nil {
		b.Fatal(err)
	}
	caller := shortener.Caller{ID: "alice"}
	for _, tc := range []struct {
		name string
		q    shortener.StatsQuery
		want int64 // visits in the range, at least
	}{
		{"year-by-day", shortener.StatsQuery{From: start, To: end}, 9_900_000},
		{"30days-by-day", shortener.StatsQuery{From: end.AddDate(0, 0, -30), To: end}, 700_000},
		{"7days-by-hour", shortener.StatsQuery{From: end.AddDate(0, 0, -7), To: end, ByHour: true}, 150_000},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				_, res, err := svc.Stats(ctx, l.Code, caller, tc.q)
				lat = append(lat, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				var n int64
				for _, s := range res.Series {
					n += s.Total
				}
				if n < tc.want {
					b.Fatalf("%d visits in the range, want at least %d", n, tc.want)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// loadStatsVisits generates n visits of code spread over the days from
// from to the end of the year (or of 30 days, with recent) and stores
// their daily counts; with recent, their hourly counts and the raw
// visits instead.
func loadStatsVisits(b *testing.B, conn *pgx.Conn, code string, from time.Time, n int, recent bool) {
	b.Helper()
	span := 365 * 86400
	if recent {
		span = 30 * 86400
	}
	gen := `SELECT $2::timestamptz + (floor(random() * $3) * interval '1 second') AS at,
			random() < 0.1 AS bot,
			'ref' || floor(random() * 30)::int || '.example' AS ref,
			(ARRAY['desktop','mobile','tablet','tv','other'])[1 + floor(random() * 5)::int] AS dev,
			(ARRAY['chrome','safari','firefox','edge','samsung browser','opera','other','yandex browser'])[1 + floor(random() * 8)::int] AS br,
			'C' || chr(65 + floor(random() * 40)::int % 26) || chr(65 + floor(random() * 40)::int / 26) AS ctry
		FROM generate_series(1, $4)`
	bucket := `date_trunc('day', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`
	if recent {
		bucket = `date_trunc('hour', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`
	}
	q := `INSERT INTO shortener_visit_counts (code, hourly, bucket, dim, value, visits)
		SELECT $1, $5, bucket,
			(CASE g WHEN 15 THEN CASE WHEN bot THEN 'b' ELSE 't' END WHEN 7 THEN 'r' WHEN 11 THEN 'd' WHEN 13 THEN 'w' ELSE 'c' END)::"char",
			CASE g WHEN 15 THEN '' WHEN 7 THEN ref WHEN 11 THEN dev WHEN 13 THEN br ELSE ctry END, n
		FROM (SELECT bucket, bot, ref, dev, br, ctry, GROUPING(ref, dev, br, ctry) AS g, count(*) AS n
			FROM (SELECT *, ` + bucket + ` AS bucket FROM (` + gen + `) v0) v
			GROUP BY GROUPING SETS ((bucket, bot), (bucket, bot, ref), (bucket, bot, dev), (bucket, bot, br), (bucket, bot, ctry))) a
		WHERE g = 15 OR NOT bot`
	if _, err := conn.Exec(b.Context(), q, code, from, span, n, recent); err != nil {
		b.Fatal(err)
	}
	if recent {
		_, err := conn.Exec(b.Context(), `INSERT INTO shortener_visits (code, at, referrer_host, device, browser, country, bot)
			SELECT $1, at, ref, dev, br, ctry, bot FROM (`+gen+`) v`, code, from, span, n)
		if err != nil {
			b.Fatal(err)
		}
	}
}
