package pgstore_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/faultnet"
	"github.com/idp-proxy/idp-proxy/internal/pgtest"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// TestRetriedVisitFlushCountedOnce: a flush of visit counts and visit
// statistics (one transaction) whose COMMIT reaches PostgreSQL but whose
// acknowledgement is lost (faultnet cuts the connection right after
// forwarding it) fails and is retried at the next flush; the retry is
// recognised by its batch ID and nothing is counted twice.
func TestRetriedVisitFlushCountedOnce(t *testing.T) {
	base, _ := schemaDSN(t)
	u, err := url.Parse(pgtest.WithParam(t, base, "pool_max_conns", "2"))
	if err != nil {
		t.Fatal(err)
	}
	fp := faultnet.New(t, u.Host)
	u.Host = fp.Addr()
	st := open(t, u.String())
	t.Cleanup(func() { _ = st.Close() })
	svc, err := shortener.New(st, shortener.Options{BaseURL: "https://sho.rt", VisitStats: true, VisitFlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	h, err := shortener.NewHandler(svc, shortener.HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	// A limited link's visits are counted by the redirect itself, so the
	// first flush writes statistics only.
	limited, err := svc.Create(ctx, shortener.NewLink{URL: "https://example.com/limited", MaxVisits: 1000})
	if err != nil {
		t.Fatal(err)
	}
	open, err := svc.Create(ctx, shortener.NewLink{URL: "https://example.com/open"})
	if err != nil {
		t.Fatal(err)
	}
	visit := func(code string, n int) {
		t.Helper()
		for range n {
			req := httptest.NewRequest("GET", "/"+code, nil)
			req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusFound {
				t.Fatalf("GET /%s: %d %s", code, rec.Code, rec.Body)
			}
		}
	}
	total := func(code string) int64 {
		t.Helper()
		s, err := st.VisitStats(ctx, code, shortener.StatsQuery{From: time.Now().Add(-48 * time.Hour), To: time.Now().Add(48 * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, b := range s.Series {
			n += b.Total
		}
		return n
	}
	// flushCut flushes with the connection cut right after the first
	// message containing pattern reached PostgreSQL, then flushes again.
	flushCut := func(pattern string) {
		t.Helper()
		fp.CutAfter([]byte(pattern))
		if err := svc.Flush(ctx); err == nil {
			t.Fatal("the flush whose acknowledgement was lost reported success: the test proves nothing")
		}
		if err := svc.Flush(ctx); err != nil {
			t.Fatalf("retry: %v", err)
		}
	}
	visits := func(code string) int64 {
		t.Helper()
		l, err := st.Get(ctx, code)
		if err != nil {
			t.Fatal(err)
		}
		return l.Visits
	}

	visit(limited.Code, 5)
	flushCut("commit") // the batch's transaction loses its acknowledgement
	if n := total(limited.Code); n != 5 {
		t.Errorf("statistics after a retried flush: %d visits, want 5", n)
	}

	// The first statement that carries the link's code is the visit
	// counts' update: cut there, whether it commits on its own or in a
	// transaction.
	visit(open.Code, 7)
	flushCut(open.Code)
	if n := visits(open.Code); n != 7 {
		t.Errorf("visit count after a flush cut at its update: %d, want 7", n)
	}
	// The batch's transaction, counts and statistics, loses its
	// acknowledgement.
	visit(open.Code, 3)
	flushCut("commit")
	if n := visits(open.Code); n != 10 {
		t.Errorf("visit count after a retried flush: %d, want 10", n)
	}
	if n := total(open.Code); n != 10 {
		t.Errorf("statistics of the second link: %d visits, want 10", n)
	}
}
