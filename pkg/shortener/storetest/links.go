package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

func sameLink(a, b shortener.Link) bool {
	return a.Code == b.Code && a.URL == b.URL && a.CreatedBy == b.CreatedBy && a.CreatedAt.Equal(b.CreatedAt) &&
		a.ExpiresAt.Equal(b.ExpiresAt) && a.MaxVisits == b.MaxVisits && a.Visits == b.Visits
}

func mustGetExact(t *testing.T, s shortener.Store, want shortener.Link) {
	t.Helper()
	got, err := s.Get(context.Background(), want.Code)
	if err != nil {
		t.Fatalf("Get(%q): %v", want.Code, err)
	}
	if !sameLink(got, want) {
		t.Fatalf("Get(%q) = %+v, want %+v", want.Code, got, want)
	}
}

func testExpiryAndLimits(t *testing.T, s shortener.Store) {
	links := []shortener.Link{
		{Code: "expOnly", URL: "https://example.com/e", CreatedBy: "alice", CreatedAt: at(1), ExpiresAt: at(3600)},
		{Code: "maxOnly", URL: "https://example.com/m", CreatedAt: at(2), MaxVisits: 3},
		{Code: "both-_1", URL: "https://example.com/b", CreatedBy: "bob", CreatedAt: at(3), ExpiresAt: at(7200), MaxVisits: 1 << 40, Visits: 7},
		{Code: "plain12", URL: "https://example.com/p", CreatedAt: at(4)},
	}
	for _, l := range links {
		mustCreate(t, s, l)
	}
	for _, l := range links {
		mustGetExact(t, s, l)
	}
}

// ownerLinks creates n links of owner, one second apart (newest last),
// interleaved with links of other owners and without owner, and returns
// them newest first.
func ownerLinks(t *testing.T, s shortener.Store, owner string, n int) []shortener.Link {
	t.Helper()
	var want []shortener.Link
	for i := range n {
		l := shortener.Link{Code: fmt.Sprintf("own%03d", i), URL: fmt.Sprintf("https://example.com/%d", i), CreatedBy: owner, CreatedAt: at(int64(i))}
		mustCreate(t, s, l)
		want = append(want, l)
		mustCreate(t, s, shortener.Link{Code: fmt.Sprintf("oth%03d", i), URL: "https://example.com/o", CreatedBy: owner + "x", CreatedAt: at(int64(i))})
		mustCreate(t, s, shortener.Link{Code: fmt.Sprintf("non%03d", i), URL: "https://example.com/n", CreatedAt: at(int64(i))})
	}
	slices.Reverse(want)
	return want
}

// listAll pages through owner's links with the given page size.
func listAll(t *testing.T, s shortener.Store, owner string, page int) []shortener.Link {
	t.Helper()
	var all []shortener.Link
	var after shortener.Cursor
	for range 1000 {
		got, err := s.List(context.Background(), owner, after, page)
		if err != nil {
			t.Fatalf("List(%q, %+v, %d): %v", owner, after, page, err)
		}
		if len(got) > page {
			t.Fatalf("List returned %d links, limit %d", len(got), page)
		}
		all = append(all, got...)
		if len(got) < page {
			return all
		}
		after = shortener.CursorOf(got[len(got)-1])
	}
	t.Fatal("List never ended")
	return nil
}

func checkList(t *testing.T, got, want []shortener.Link) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("listed %d links, want %d: %v", len(got), len(want), codes(got))
	}
	for i := range want {
		if !sameLink(got[i], want[i]) {
			t.Fatalf("link %d = %+v, want %+v (order %v)", i, got[i], want[i], codes(got))
		}
	}
}

func codes(links []shortener.Link) []string {
	out := make([]string, len(links))
	for i, l := range links {
		out[i] = l.Code
	}
	return out
}

func testListOrderAndPages(t *testing.T, s shortener.Store) {
	want := ownerLinks(t, s, "alice", 25)
	for _, page := range []int{1, 7, 25, 100} {
		checkList(t, listAll(t, s, "alice", page), want)
	}
	// Visits are part of the listed link.
	if err := s.WriteVisits(context.Background(), shortener.VisitBatch{Counts: map[string]int64{"own003": 5}}); err != nil {
		t.Fatal(err)
	}
	want[len(want)-4].Visits = 5
	checkList(t, listAll(t, s, "alice", 10), want)
	// A cursor stays valid when its link is deleted.
	if err := s.Delete(context.Background(), want[4].Code, ""); err != nil {
		t.Fatal(err)
	}
	got, err := s.List(context.Background(), "alice", shortener.CursorOf(want[4]), 3)
	if err != nil {
		t.Fatal(err)
	}
	checkList(t, got, want[5:8])
	for _, owner := range []string{"nobody", "alic", "Alice"} {
		if got, err := s.List(context.Background(), owner, shortener.Cursor{}, 10); err != nil || len(got) != 0 {
			t.Fatalf("List(%q) = %v, %v; want none", owner, codes(got), err)
		}
	}
}

// testListTies: links created in the same microsecond are ordered by code
// descending, byte order, longer codes before their prefixes.
func testListTies(t *testing.T, s shortener.Store) {
	same := at(42)
	in := []string{"abc", "abcd", "ab-d", "ab_d", "ABCD", "zzz", "Zzz", "a-b", "a_b", "0ab"}
	for _, c := range in {
		mustCreate(t, s, shortener.Link{Code: c, URL: "https://example.com/" + c, CreatedBy: "tie", CreatedAt: same})
	}
	mustCreate(t, s, shortener.Link{Code: "newer", URL: "https://example.com/n", CreatedBy: "tie", CreatedAt: same.Add(time.Microsecond)})
	mustCreate(t, s, shortener.Link{Code: "older", URL: "https://example.com/o", CreatedBy: "tie", CreatedAt: same.Add(-time.Microsecond)})
	wantCodes := append([]string{"newer"}, in...)
	slices.SortFunc(wantCodes[1:], func(a, b string) int { return -compareBytes(a, b) })
	wantCodes = append(wantCodes, "older")
	for _, page := range []int{1, 2, 5, 50} {
		if got := codes(listAll(t, s, "tie", page)); !slices.Equal(got, wantCodes) {
			t.Fatalf("page %d: order %v, want %v", page, got, wantCodes)
		}
	}
}

func compareBytes(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func testDelete(t *testing.T, s shortener.Store) {
	ctx := context.Background()
	l := shortener.Link{Code: "delMe01", URL: "https://example.com/d", CreatedBy: "alice", CreatedAt: at(1)}
	mustCreate(t, s, l)
	if err := s.WriteVisits(ctx, shortener.VisitBatch{Counts: map[string]int64{l.Code: 3}}); err != nil {
		t.Fatal(err)
	}
	for _, owner := range []string{"bob", "alice ", "ALICE"} {
		if err := s.Delete(ctx, l.Code, owner); !errors.Is(err, shortener.ErrNotFound) {
			t.Fatalf("Delete by %q = %v, want ErrNotFound", owner, err)
		}
	}
	l.Visits = 3
	mustGetExact(t, s, l)
	if err := s.Delete(ctx, l.Code, "alice"); err != nil {
		t.Fatalf("Delete by the owner: %v", err)
	}
	if _, err := s.Get(ctx, l.Code); !errors.Is(err, shortener.ErrNotFound) {
		t.Fatalf("Get after Delete = %v", err)
	}
	if err := s.Delete(ctx, l.Code, "alice"); !errors.Is(err, shortener.ErrNotFound) {
		t.Fatalf("second Delete = %v, want ErrNotFound", err)
	}
	if got, _ := s.List(ctx, "alice", shortener.Cursor{}, 10); len(got) != 0 {
		t.Fatalf("deleted link still listed: %v", codes(got))
	}
	// The code is free again, with no visits carried over.
	again := shortener.Link{Code: l.Code, URL: "https://example.com/new", CreatedBy: "bob", CreatedAt: at(2)}
	mustCreate(t, s, again)
	mustGetExact(t, s, again)
	// An owner of "" deletes any link.
	if err := s.Delete(ctx, again.Code, ""); err != nil {
		t.Fatalf("Delete without owner: %v", err)
	}
	anon := shortener.Link{Code: "anon001", URL: "https://example.com/a", CreatedAt: at(3)}
	mustCreate(t, s, anon)
	if err := s.Delete(ctx, anon.Code, "alice"); !errors.Is(err, shortener.ErrNotFound) {
		t.Fatalf("Delete of an ownerless link by alice = %v, want ErrNotFound", err)
	}
}

func testVisit(t *testing.T, s shortener.Store) {
	ctx := context.Background()
	now := at(100)
	mustCreate(t, s, shortener.Link{Code: "limit03", URL: "https://example.com/l", CreatedAt: at(1), MaxVisits: 3})
	mustCreate(t, s, shortener.Link{Code: "expired", URL: "https://example.com/e", CreatedAt: at(1), ExpiresAt: now})
	mustCreate(t, s, shortener.Link{Code: "future1", URL: "https://example.com/f", CreatedAt: at(1), ExpiresAt: now.Add(time.Microsecond), MaxVisits: 1})
	for i := 1; i <= 3; i++ {
		l, err := s.Visit(ctx, "limit03", now)
		if err != nil || l.Visits != int64(i) || l.URL != "https://example.com/l" || l.MaxVisits != 3 {
			t.Fatalf("Visit %d = %+v, %v", i, l, err)
		}
	}
	if _, err := s.Visit(ctx, "limit03", now); !errors.Is(err, shortener.ErrGone) {
		t.Fatalf("fourth Visit = %v, want ErrGone", err)
	}
	mustGetExact(t, s, shortener.Link{Code: "limit03", URL: "https://example.com/l", CreatedAt: at(1), MaxVisits: 3, Visits: 3})
	if _, err := s.Visit(ctx, "expired", now); !errors.Is(err, shortener.ErrGone) {
		t.Fatalf("Visit at expiry = %v, want ErrGone", err)
	}
	if l, err := s.Visit(ctx, "future1", now); err != nil || l.Visits != 1 {
		t.Fatalf("Visit before expiry = %+v, %v", l, err)
	}
	if _, err := s.Visit(ctx, "missing", now); !errors.Is(err, shortener.ErrNotFound) {
		t.Fatalf("Visit of a missing link = %v, want ErrNotFound", err)
	}
}

// testConcurrentVisitLimit: many goroutines race for the visits of a
// limited link; exactly MaxVisits win.
func testConcurrentVisitLimit(t *testing.T, s shortener.Store) {
	const limit, workers, each = 25, 16, 5
	mustCreate(t, s, shortener.Link{Code: "racyMax", URL: "https://example.com/r", CreatedAt: at(1), MaxVisits: limit})
	var ok, gone atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				_, err := s.Visit(context.Background(), "racyMax", at(2))
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, shortener.ErrGone):
					gone.Add(1)
				default:
					t.Errorf("Visit: %v", err)
				}
			}
		})
	}
	wg.Wait()
	if ok.Load() != limit || gone.Load() != workers*each-limit {
		t.Fatalf("%d visits succeeded and %d were gone; want %d and %d", ok.Load(), gone.Load(), limit, workers*each-limit)
	}
}

func testWriteVisitCounts(t *testing.T, s shortener.Store) {
	ctx := context.Background()
	mustCreate(t, s, shortener.Link{Code: "count01", URL: "https://example.com/1", CreatedAt: at(1)})
	mustCreate(t, s, shortener.Link{Code: "count02", URL: "https://example.com/2", CreatedAt: at(1), Visits: 10})
	if err := s.WriteVisits(ctx, shortener.VisitBatch{Counts: map[string]int64{"count01": 2, "count02": 5, "missing": 9}}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteVisits(ctx, shortener.VisitBatch{Counts: map[string]int64{"count01": 1}}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteVisits(ctx, shortener.VisitBatch{}); err != nil {
		t.Fatal(err)
	}
	mustGetExact(t, s, shortener.Link{Code: "count01", URL: "https://example.com/1", CreatedAt: at(1), Visits: 3})
	mustGetExact(t, s, shortener.Link{Code: "count02", URL: "https://example.com/2", CreatedAt: at(1), Visits: 15})
	if _, err := s.Get(ctx, "missing"); !errors.Is(err, shortener.ErrNotFound) {
		t.Fatalf("WriteVisits created a link: %v", err)
	}
}

func testClosedLinkMethods(t *testing.T, s shortener.Store) {
	ctx := context.Background()
	mustCreate(t, s, shortener.Link{Code: "closed1", URL: "https://example.com/", CreatedBy: "alice", CreatedAt: at(1), MaxVisits: 5})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, "alice", shortener.Cursor{}, 10); err == nil {
		t.Error("List after Close = nil error")
	}
	if err := s.Delete(ctx, "closed1", ""); err == nil {
		t.Error("Delete after Close = nil error")
	}
	if _, err := s.Visit(ctx, "closed1", at(2)); err == nil {
		t.Error("Visit after Close = nil error")
	}
	if err := s.WriteVisits(ctx, shortener.VisitBatch{Counts: map[string]int64{"closed1": 1}}); err == nil {
		t.Error("WriteVisits after Close = nil error")
	}
}
