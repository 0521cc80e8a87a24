package cli

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/pgstore"
)

// lazyStore is a store that is not connected yet: a PostgreSQL that does
// not answer at start is an outage like any other, not a reason to stay
// down. Until the background connection succeeds every call fails with
// errStoreConnecting (the handlers answer 503 "the link store is
// unavailable" and /health 503), and from then on calls go to the store.
type lazyStore struct {
	cur    atomic.Pointer[shortener.Store]
	cancel context.CancelFunc
	done   chan struct{}
}

var _ shortener.Store = (*lazyStore)(nil)

// errStoreConnecting: the store has not been reached since the start.
var errStoreConnecting = errors.New("shortener: the link store is not connected yet")

// newLazyStore calls open every interval until it succeeds or Close is
// called, logging each failure.
func newLazyStore(open func(context.Context) (shortener.Store, error), interval time.Duration, log *slog.Logger) *lazyStore {
	ctx, cancel := context.WithCancel(context.Background())
	l := &lazyStore{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			s, err := open(ctx)
			if err == nil {
				l.cur.Store(&s)
				log.Info("store connected: serving links again")
				return
			}
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, pgstore.ErrRefused) {
				// It came up, and refuses: the configuration or the
				// database must change; keep trying until it does.
				log.Error("PostgreSQL answers but refuses the store; links answer 503 until this is fixed", "err", err)
				continue
			}
			log.Warn("the store is still unreachable; links answer 503 until it answers", "err", err)
		}
	}()
	return l
}

func (l *lazyStore) store() (shortener.Store, error) {
	if s := l.cur.Load(); s != nil {
		return *s, nil
	}
	return nil, errStoreConnecting
}

func (l *lazyStore) Create(ctx context.Context, link shortener.Link) error {
	s, err := l.store()
	if err != nil {
		return err
	}
	return s.Create(ctx, link)
}

func (l *lazyStore) Get(ctx context.Context, code string) (shortener.Link, error) {
	s, err := l.store()
	if err != nil {
		return shortener.Link{}, err
	}
	return s.Get(ctx, code)
}

func (l *lazyStore) List(ctx context.Context, owner string, after shortener.Cursor, limit int) ([]shortener.Link, error) {
	s, err := l.store()
	if err != nil {
		return nil, err
	}
	return s.List(ctx, owner, after, limit)
}

func (l *lazyStore) Delete(ctx context.Context, code, owner string) error {
	s, err := l.store()
	if err != nil {
		return err
	}
	return s.Delete(ctx, code, owner)
}

func (l *lazyStore) Visit(ctx context.Context, code string, now time.Time) (shortener.Link, error) {
	s, err := l.store()
	if err != nil {
		return shortener.Link{}, err
	}
	return s.Visit(ctx, code, now)
}

func (l *lazyStore) Edit(ctx context.Context, code, owner string, e shortener.LinkEdit) (shortener.Link, error) {
	s, err := l.store()
	if err != nil {
		return shortener.Link{}, err
	}
	return s.Edit(ctx, code, owner, e)
}

func (l *lazyStore) WriteVisits(ctx context.Context, b shortener.VisitBatch) error {
	s, err := l.store()
	if err != nil {
		return err
	}
	return s.WriteVisits(ctx, b)
}

func (l *lazyStore) PruneVisits(ctx context.Context, before time.Time) error {
	s, err := l.store()
	if err != nil {
		return err
	}
	return s.PruneVisits(ctx, before)
}

func (l *lazyStore) VisitStats(ctx context.Context, code string, q shortener.StatsQuery) (shortener.VisitStats, error) {
	s, err := l.store()
	if err != nil {
		return shortener.VisitStats{}, err
	}
	return s.VisitStats(ctx, code, q)
}

func (l *lazyStore) Ping(ctx context.Context) error {
	s, err := l.store()
	if err != nil {
		return err
	}
	return s.Ping(ctx)
}

// Close stops connecting and closes the store if it was reached.
func (l *lazyStore) Close() error {
	l.cancel()
	<-l.done
	if s := l.cur.Load(); s != nil {
		return (*s).Close()
	}
	return nil
}
