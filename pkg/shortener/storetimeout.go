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
// frozen; and, through gate, once a call has run out of time, refuses the
// others at once until the store answers again (see storeGate). Stores
// honour their context (pgx and bbolt's lock wait do).
type timeoutStore struct {
	s    Store
	d    time.Duration
	gate *storeGate
}

// call runs f, a call on one link (or a Ping) that a store that answers
// serves quickly, with the deadline, if the gate admits it: running out
// of it takes the store as not answering.
func (s timeoutStore) call(ctx context.Context, f func(context.Context) error) error {
	return s.run(ctx, false, f)
}

// callBulk is call for a list, a statistics query or a batch, which may
// run out of the deadline with the store answering: that is not taken as
// the store not answering.
func (s timeoutStore) callBulk(ctx context.Context, f func(context.Context) error) error {
	return s.run(ctx, true, f)
}

func (s timeoutStore) run(ctx context.Context, bulk bool, f func(context.Context) error) error {
	probe, err := s.gate.enter()
	if err != nil {
		return err
	}
	// The deadline costs a timer only if the store waits on it (see
	// lazyDeadline): context.WithTimeout's timer, its registration with
	// the request's context and their allocations were a third of a
	// bbolt redirect without the cache.
	cctx := withLazyDeadline(ctx, time.Now(), s.d)
	err = f(cctx)
	s.gate.leave(probe, bulk, ctx, cctx, err)
	cctx.stop()
	return err
}

func (s timeoutStore) Create(ctx context.Context, l Link) error {
	return s.call(ctx, func(ctx context.Context) error { return s.s.Create(ctx, l) })
}

func (s timeoutStore) Get(ctx context.Context, code string) (l Link, err error) {
	err = s.call(ctx, func(ctx context.Context) error {
		l, err = s.s.Get(ctx, code)
		return err
	})
	return l, err
}

func (s timeoutStore) List(ctx context.Context, owner string, after Cursor, limit int) (links []Link, err error) {
	err = s.callBulk(ctx, func(ctx context.Context) error {
		links, err = s.s.List(ctx, owner, after, limit)
		return err
	})
	return links, err
}

func (s timeoutStore) Delete(ctx context.Context, code, owner string) error {
	// Bulk: deleting a link deletes its statistics.
	return s.callBulk(ctx, func(ctx context.Context) error { return s.s.Delete(ctx, code, owner) })
}

func (s timeoutStore) Visit(ctx context.Context, code string, now time.Time) (l Link, err error) {
	err = s.call(ctx, func(ctx context.Context) error {
		l, err = s.s.Visit(ctx, code, now)
		return err
	})
	return l, err
}

func (s timeoutStore) WriteVisits(ctx context.Context, b VisitBatch) error {
	return s.callBulk(ctx, func(ctx context.Context) error { return s.s.WriteVisits(ctx, b) })
}

func (s timeoutStore) Ping(ctx context.Context) error {
	return s.call(ctx, s.s.Ping)
}

func (s timeoutStore) Edit(ctx context.Context, code, owner string, e LinkEdit) (l Link, err error) {
	err = s.call(ctx, func(ctx context.Context) error {
		l, err = s.s.Edit(ctx, code, owner, e)
		return err
	})
	return l, err
}

// PruneVisits has no deadline of its own beyond ctx's: a first prune may
// have much to drop.
func (s timeoutStore) PruneVisits(ctx context.Context, before time.Time) error {
	return s.s.PruneVisits(ctx, before)
}

func (s timeoutStore) VisitStats(ctx context.Context, code string, q StatsQuery) (st VisitStats, err error) {
	err = s.callBulk(ctx, func(ctx context.Context) error {
		st, err = s.s.VisitStats(ctx, code, q)
		return err
	})
	return st, err
}

func (s timeoutStore) Close() error { return s.s.Close() }
