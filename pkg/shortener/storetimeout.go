package shortener

import (
	"context"
	"time"
)

// DefaultStoreTimeout bounds each store call when Options.StoreTimeout is
// zero.
const DefaultStoreTimeout = 5 * time.Second

// timeoutStore gives every call of a Store a deadline, so that a store that
// hangs (a frozen PostgreSQL, a network black hole) fails the request
// after d with a 503 instead of holding it for as long as the store stays
// frozen. Stores honour their context (pgx and bbolt's lock wait do).
type timeoutStore struct {
	Store
	d time.Duration
}

func (s timeoutStore) Create(ctx context.Context, l Link) error {
	ctx, cancel := context.WithTimeout(ctx, s.d)
	defer cancel()
	return s.Store.Create(ctx, l)
}

func (s timeoutStore) Get(ctx context.Context, code string) (Link, error) {
	ctx, cancel := context.WithTimeout(ctx, s.d)
	defer cancel()
	return s.Store.Get(ctx, code)
}

func (s timeoutStore) List(ctx context.Context, owner string, after Cursor, limit int) ([]Link, error) {
	ctx, cancel := context.WithTimeout(ctx, s.d)
	defer cancel()
	return s.Store.List(ctx, owner, after, limit)
}

func (s timeoutStore) Delete(ctx context.Context, code, owner string) error {
	ctx, cancel := context.WithTimeout(ctx, s.d)
	defer cancel()
	return s.Store.Delete(ctx, code, owner)
}

func (s timeoutStore) Visit(ctx context.Context, code string, now time.Time) (Link, error) {
	ctx, cancel := context.WithTimeout(ctx, s.d)
	defer cancel()
	return s.Store.Visit(ctx, code, now)
}

func (s timeoutStore) AddVisits(ctx context.Context, counts map[string]int64) error {
	ctx, cancel := context.WithTimeout(ctx, s.d)
	defer cancel()
	return s.Store.AddVisits(ctx, counts)
}

func (s timeoutStore) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.d)
	defer cancel()
	return s.Store.Ping(ctx)
}

// Edit forwards to the store's Editor, or returns ErrNotSupported.
func (s timeoutStore) Edit(ctx context.Context, code, owner string, e LinkEdit) (Link, error) {
	ed, ok := s.Store.(Editor)
	if !ok {
		return Link{}, ErrNotSupported
	}
	ctx, cancel := context.WithTimeout(ctx, s.d)
	defer cancel()
	return ed.Edit(ctx, code, owner, e)
}

func (s timeoutStore) visitStats() (VisitStatsStore, bool) {
	vs, ok := s.Store.(VisitStatsStore)
	return vs, ok
}

// RecordVisits forwards to the store's VisitStatsStore.
func (s timeoutStore) RecordVisits(ctx context.Context, events []VisitEvent) error {
	vs, ok := s.visitStats()
	if !ok {
		return ErrNotSupported
	}
	ctx, cancel := context.WithTimeout(ctx, s.d)
	defer cancel()
	return vs.RecordVisits(ctx, events)
}

// PruneVisits forwards to the store's VisitStatsStore, with no deadline
// of its own beyond ctx's: a first prune may have much to drop.
func (s timeoutStore) PruneVisits(ctx context.Context, before time.Time) error {
	vs, ok := s.visitStats()
	if !ok {
		return ErrNotSupported
	}
	return vs.PruneVisits(ctx, before)
}

// VisitStats forwards to the store's VisitStatsStore.
func (s timeoutStore) VisitStats(ctx context.Context, code string, q StatsQuery) (VisitStats, error) {
	vs, ok := s.visitStats()
	if !ok {
		return VisitStats{}, ErrNotSupported
	}
	ctx, cancel := context.WithTimeout(ctx, s.d)
	defer cancel()
	return vs.VisitStats(ctx, code, q)
}
