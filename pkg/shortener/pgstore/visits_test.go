package pgstore_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idp-proxy/idp-proxy/internal/pgtest"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/visitinfo/visitinfotest"
)

// TestVisitStatsAcrossReplicasKeepNoPersonalData: three replicas record
// visits from known addresses, with a User-Agent, a cookie, a query and a
// referrer path; the statistics add up across replicas, and no table of
// the schema holds any of those values.
func TestVisitStatsAcrossReplicasKeepNoPersonalData(t *testing.T) {
	base, schema := schemaDSN(t)
	dsn := pgtest.WithParam(t, base, "pool_max_conns", "4")
	geo := visitinfotest.CountryDB(t)
	var svcs []*shortener.Service
	var hs []http.Handler
	for range 3 {
		st := open(t, dsn)
		svc, err := shortener.New(st, shortener.Options{BaseURL: "https://sho.rt", VisitStats: true, VisitFlushInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		h, err := shortener.NewHandler(svc, shortener.HandlerOptions{
			Owner: shortener.OwnerFromHeader("X-User"), Country: geo.Country,
			ClientIP: shortener.ClientIPFromHeader("X-Forwarded-For"),
		})
		if err != nil {
			t.Fatal(err)
		}
		svcs, hs = append(svcs, svc), append(hs, h)
	}
	l, err := svcs[0].Create(t.Context(), shortener.NewLink{URL: "https://example.com/", Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	ips := []string{"192.0.2.123", "198.51.100.77", "2001:db8:1::abcd"}
	const ua = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0 UniqueAgentMarker"
	for i, h := range hs {
		for range 4 {
			req := httptest.NewRequest("GET", "/"+l.Code+"?utm_campaign=query-secret", nil)
			req.RemoteAddr = "[2001:db8:ffff::1]:5555"
			req.Header.Set("X-Forwarded-For", ips[i])
			req.Header.Set("User-Agent", ua)
			req.Header.Set("Referer", "https://news.example/path-secret?q=query-secret2")
			req.Header.Set("Cookie", "session=cookie-secret")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusFound {
				t.Fatalf("redirect: %d", rec.Code)
			}
		}
		req := httptest.NewRequest("GET", "/"+l.Code, nil)
		req.Header.Set("User-Agent", "curl/8.5.0")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	for _, svc := range svcs {
		if err := svc.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	_, st, err := svcs[1].Stats(t.Context(), l.Code, shortener.Caller{ID: "alice"}, shortener.StatsQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var total, bots int64
	for _, b := range st.Series {
		total, bots = total+b.Total, bots+b.Bots
	}
	if total != 15 || bots != 3 || len(st.Countries) != 3 || st.Countries[0].Visits != 4 || len(st.Referrers) != 1 || st.Referrers[0].Value != "news.example" {
		t.Fatalf("stats across replicas: total %d, bots %d, %+v", total, bots, st)
	}

	// Every row of every table of the schema, as text.
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var dump strings.Builder
	for _, tbl := range tables {
		rows, err := conn.Query(ctx, `SELECT t::text FROM `+pgx.Identifier{tbl}.Sanitize()+` t`)
		if err != nil {
			t.Fatal(err)
		}
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range texts {
			dump.WriteString(s + "\n")
		}
	}
	text := dump.String()
	if !strings.Contains(text, "news.example") || !strings.Contains(text, "JP") {
		t.Fatalf("the visits were not stored at all: the test would prove nothing (tables %v)", tables)
	}
	for _, needle := range append(ips, "2001:db8:ffff::1", "UniqueAgentMarker", "Gecko", "curl", "path-secret", "query-secret", "cookie-secret",
		"c000027b" /* 192.0.2.123 in hex */, "c633644d" /* 198.51.100.77 */) {
		if strings.Contains(strings.ToLower(text), strings.ToLower(needle)) {
			t.Errorf("a table holds %q", needle)
		}
	}
}
