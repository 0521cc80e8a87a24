package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// testGetRedirect: a store's GetRedirect (shortener.RedirectGetter, when
// it has one) answers as Get, but for the visit count of a link without
// MaxVisits, which it may leave at 0; a limited link's count is Get's.
func testGetRedirect(t *testing.T, s shortener.Store) {
	rg, ok := s.(shortener.RedirectGetter)
	if !ok {
		t.Skip("the store has no GetRedirect")
	}
	ctx := context.Background()
	mustCreate(t, s, shortener.Link{Code: "redir01", URL: "https://example.com/r?q=1", CreatedBy: "alice", CreatedAt: at(1), ExpiresAt: at(500)})
	mustCreate(t, s, shortener.Link{Code: "redir02", URL: "https://example.com/l", CreatedAt: at(2), MaxVisits: 5})
	if err := s.WriteVisits(ctx, shortener.VisitBatch{Counts: map[string]int64{"redir01": 7}}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := s.Visit(ctx, "redir02", at(3)); err != nil {
			t.Fatal(err)
		}
	}
	for _, code := range []string{"redir01", "redir02"} {
		want, err := s.Get(ctx, code)
		if err != nil {
			t.Fatal(err)
		}
		got, err := rg.GetRedirect(ctx, code)
		if err != nil {
			t.Fatalf("GetRedirect(%q): %v", code, err)
		}
		if !want.Limited() {
			if got.Visits != 0 && got.Visits != want.Visits {
				t.Errorf("GetRedirect(%q).Visits = %d, want 0 or %d", code, got.Visits, want.Visits)
			}
			got.Visits = want.Visits
		}
		if got.Code != want.Code || got.URL != want.URL || got.CreatedBy != want.CreatedBy || !got.CreatedAt.Equal(want.CreatedAt) ||
			!got.ExpiresAt.Equal(want.ExpiresAt) || got.MaxVisits != want.MaxVisits || got.Visits != want.Visits {
			t.Errorf("GetRedirect(%q) = %+v, want %+v", code, got, want)
		}
	}
	if _, err := rg.GetRedirect(ctx, "nothere"); !errors.Is(err, shortener.ErrNotFound) {
		t.Errorf("GetRedirect(missing) = %v, want ErrNotFound", err)
	}
}
