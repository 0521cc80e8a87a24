package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

func ptr[T any](v T) *T { return &v }

func testEdit(t *testing.T, s shortener.Store) {
	ed := s
	ctx := context.Background()
	orig := shortener.Link{Code: "edit001", URL: "https://example.com/old", CreatedBy: "alice", CreatedAt: at(1), ExpiresAt: at(3600), MaxVisits: 10, Visits: 4}
	mustCreate(t, s, orig)
	if _, err := ed.Edit(ctx, "edit001", "mallory", shortener.LinkEdit{URL: ptr("https://evil.example/")}); !errors.Is(err, shortener.ErrNotFound) {
		t.Fatalf("Edit by another owner: %v, want ErrNotFound", err)
	}
	if _, err := ed.Edit(ctx, "missing", "", shortener.LinkEdit{URL: ptr("https://example.com/")}); !errors.Is(err, shortener.ErrNotFound) {
		t.Fatalf("Edit of a missing link: %v, want ErrNotFound", err)
	}
	mustGetExact(t, s, orig)

	// The URL alone: the rest stays.
	want := orig
	want.URL = "https://example.com/new?q=1&r=%20"
	got, err := ed.Edit(ctx, "edit001", "alice", shortener.LinkEdit{URL: ptr(want.URL)})
	if err != nil {
		t.Fatal(err)
	}
	if !sameLink(got, want) {
		t.Fatalf("Edit returned %+v, want %+v", got, want)
	}
	mustGetExact(t, s, want)

	// Clearing expiry and limit (an administrator: owner "").
	want.ExpiresAt, want.MaxVisits = at(0).AddDate(1, 0, 0), 0
	if _, err := ed.Edit(ctx, "edit001", "", shortener.LinkEdit{ExpiresAt: ptr(want.ExpiresAt), MaxVisits: ptr(int64(0))}); err != nil {
		t.Fatal(err)
	}
	mustGetExact(t, s, want)
	want.ExpiresAt = time.Time{}
	if _, err := ed.Edit(ctx, "edit001", "alice", shortener.LinkEdit{ExpiresAt: ptr(time.Time{})}); err != nil {
		t.Fatal(err)
	}
	mustGetExact(t, s, want)

	// A limit equal to the visits leaves the link exhausted.
	want.MaxVisits = 4
	if _, err := ed.Edit(ctx, "edit001", "alice", shortener.LinkEdit{MaxVisits: ptr(int64(4))}); err != nil {
		t.Fatal(err)
	}
	mustGetExact(t, s, want)
	if _, err := s.Visit(ctx, "edit001", at(10)); !errors.Is(err, shortener.ErrGone) {
		t.Fatalf("Visit of a link exhausted by an edit: %v, want ErrGone", err)
	}
	// Raising it revives the link.
	want.MaxVisits, want.Visits = 5, 5
	if _, err := ed.Edit(ctx, "edit001", "alice", shortener.LinkEdit{MaxVisits: ptr(int64(5))}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Visit(ctx, "edit001", at(10)); err != nil {
		t.Fatalf("Visit after raising the limit: %v", err)
	}
	mustGetExact(t, s, want)
	// The owner index still lists it.
	links, err := s.List(ctx, "alice", shortener.Cursor{}, 10)
	if err != nil || len(links) != 1 || !sameLink(links[0], want) {
		t.Fatalf("List after edits = %+v, %v; want [%+v]", links, err, want)
	}
}

func testEditOverLimit(t *testing.T, s shortener.Store) {
	ed := s
	ctx := context.Background()
	l := shortener.Link{Code: "over001", URL: "https://example.com/", CreatedBy: "bob", CreatedAt: at(1), Visits: 7}
	mustCreate(t, s, l)
	_, err := ed.Edit(ctx, "over001", "bob", shortener.LinkEdit{URL: ptr("https://example.com/other"), MaxVisits: ptr(int64(6))})
	if !errors.Is(err, shortener.ErrOverLimit) {
		t.Fatalf("Edit to a limit below the visits: %v, want ErrOverLimit", err)
	}
	mustGetExact(t, s, l) // nothing changed, the URL neither
}

// testConcurrentEditAndVisits: visits racing an edit that lowers the
// limit never end above it, and Visit sees the link before or after the
// edit.
func testConcurrentEditAndVisits(t *testing.T, s shortener.Store) {
	ed := s
	ctx := context.Background()
	mustCreate(t, s, shortener.Link{Code: "race001", URL: "https://example.com/a", CreatedAt: at(1), MaxVisits: 1000})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				l, err := s.Visit(ctx, "race001", at(5))
				if err != nil && !errors.Is(err, shortener.ErrGone) {
					t.Errorf("Visit: %v", err)
					return
				}
				if err == nil && l.URL != "https://example.com/a" && l.URL != "https://example.com/b" {
					t.Errorf("Visit returned URL %q, never stored", l.URL)
				}
			}
		})
	}
	var limit int64
	wg.Go(func() {
		for n := int64(40); n <= 80; n += 10 {
			_, err := ed.Edit(ctx, "race001", "", shortener.LinkEdit{URL: ptr("https://example.com/b"), MaxVisits: ptr(n)})
			if err == nil {
				limit = n
				return
			}
			if !errors.Is(err, shortener.ErrOverLimit) {
				t.Errorf("Edit: %v", err)
				return
			}
		}
		limit = 1000
	})
	wg.Wait()
	got, err := s.Get(ctx, "race001")
	if err != nil {
		t.Fatal(err)
	}
	if got.MaxVisits != limit || got.Visits > limit {
		t.Fatalf("after the race: %d visits, limit %d; want the limit %d not exceeded", got.Visits, got.MaxVisits, limit)
	}
}
