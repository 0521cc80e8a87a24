// Package memstore is an in-memory shortener.Store, for tests and demos.
// Links are lost when the process exits.
package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// Store is an in-memory shortener.Store. The zero value is not usable; call
// New.
type Store struct {
	mu     sync.RWMutex
	links  map[string]shortener.Link
	closed bool
	// visits are the raw visit events, days their daily aggregates (At
	// truncated to the day).
	visits []shortener.VisitEvent
	days   map[shortener.VisitEvent]int64
}

var _ shortener.Store = (*Store)(nil)

// New returns an empty Store.
func New() *Store {
	return &Store{links: make(map[string]shortener.Link)}
}

// Create stores l, or returns an error matching shortener.ErrDuplicate when
// its code is taken.
func (s *Store) Create(_ context.Context, l shortener.Link) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return shortener.ErrClosed
	}
	if _, ok := s.links[l.Code]; ok {
		return fmt.Errorf("memstore: create %q: %w", l.Code, shortener.ErrDuplicate)
	}
	s.links[l.Code] = l
	return nil
}

// Get returns the link with the given code, or shortener.ErrNotFound.
func (s *Store) Get(_ context.Context, code string) (shortener.Link, error) {
	s.mu.RLock()
	l, ok := s.links[code]
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return shortener.Link{}, shortener.ErrClosed
	}
	if !ok {
		return shortener.Link{}, shortener.ErrNotFound
	}
	return l, nil
}

// List returns up to limit links of owner, newest first, after the
// position after. It scans every link: fine for tests and demos.
func (s *Store) List(_ context.Context, owner string, after shortener.Cursor, limit int) ([]shortener.Link, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, shortener.ErrClosed
	}
	var out []shortener.Link
	for _, l := range s.links {
		if l.CreatedBy == owner && (after.IsZero() || before(shortener.CursorOf(l), after)) {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b shortener.Link) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.Code, a.Code)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// before reports whether a comes after b in list order (older, or as old
// with a smaller code).
func before(a, b shortener.Cursor) bool {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c < 0
	}
	return cmp.Less(a.Code, b.Code)
}

// Delete removes the link of code when owner is "" or its creator.
func (s *Store) Delete(_ context.Context, code, owner string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return shortener.ErrClosed
	}
	l, ok := s.links[code]
	if !ok || (owner != "" && l.CreatedBy != owner) {
		return fmt.Errorf("memstore: delete %q: %w", code, shortener.ErrNotFound)
	}
	delete(s.links, code)
	s.visits = slices.DeleteFunc(s.visits, func(e shortener.VisitEvent) bool { return e.Code == code })
	for k := range s.days {
		if k.Code == code {
			delete(s.days, k)
		}
	}
	return nil
}

// Visit counts one visit of the link of code, if it may still redirect.
func (s *Store) Visit(_ context.Context, code string, now time.Time) (shortener.Link, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return shortener.Link{}, shortener.ErrClosed
	}
	l, ok := s.links[code]
	switch {
	case !ok:
		return shortener.Link{}, shortener.ErrNotFound
	case l.ExpiredAt(now) || l.Exhausted():
		return l, fmt.Errorf("memstore: visit %q: %w", code, shortener.ErrGone)
	}
	l.Visits++
	s.links[code] = l
	return l, nil
}

// Ping returns shortener.ErrClosed after Close, nil before.
func (s *Store) Ping(context.Context) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return shortener.ErrClosed
	}
	return nil
}

// Len returns the number of links.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.links)
}

// Close marks the store closed. It is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

var _ shortener.Store = (*Store)(nil)

// Edit applies e to the link of code when owner is "" or its creator.
func (s *Store) Edit(_ context.Context, code, owner string, e shortener.LinkEdit) (shortener.Link, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return shortener.Link{}, shortener.ErrClosed
	}
	l, ok := s.links[code]
	if !ok || (owner != "" && l.CreatedBy != owner) {
		return shortener.Link{}, fmt.Errorf("memstore: edit %q: %w", code, shortener.ErrNotFound)
	}
	l = e.Apply(l)
	if l.MaxVisits > 0 && l.Visits > l.MaxVisits {
		return shortener.Link{}, fmt.Errorf("memstore: edit %q: %w", code, shortener.ErrOverLimit)
	}
	s.links[code] = l
	return l, nil
}

// WriteVisits adds b's counts to the links that exist, keeps its events
// of existing links and adds them to the daily aggregates, under one
// lock.
func (s *Store) WriteVisits(_ context.Context, b shortener.VisitBatch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return shortener.ErrClosed
	}
	for code, n := range b.Counts {
		if l, ok := s.links[code]; ok {
			l.Visits += n
			s.links[code] = l
		}
	}
	if len(b.Events) == 0 {
		return nil
	}
	if s.days == nil {
		s.days = map[shortener.VisitEvent]int64{}
	}
	for _, e := range b.Events {
		if _, ok := s.links[e.Code]; !ok {
			continue
		}
		s.visits = append(s.visits, e)
		day := e
		day.At, day.Count = shortener.BucketStart(e.At, false), 0
		s.days[day] += e.Visits()
	}
	return nil
}

// PruneVisits drops the raw visits before t.
func (s *Store) PruneVisits(_ context.Context, before time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return shortener.ErrClosed
	}
	s.visits = slices.DeleteFunc(s.visits, func(e shortener.VisitEvent) bool { return e.At.Before(before) })
	return nil
}

// VisitStats answers q by scanning the aggregates or the raw visits.
func (s *Store) VisitStats(_ context.Context, code string, q shortener.StatsQuery) (shortener.VisitStats, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return shortener.VisitStats{}, shortener.ErrClosed
	}
	acc := shortener.NewStatsAccumulator(q)
	in := func(t time.Time) bool { return !t.Before(q.From) && t.Before(q.To) }
	if q.ByHour {
		for _, e := range s.visits {
			if e.Code == code && in(e.At) {
				acc.Add(e, e.Visits())
			}
		}
	} else {
		for k, n := range s.days {
			if k.Code == code && in(k.At) {
				acc.Add(k, n)
			}
		}
	}
	return acc.Result(), nil
}
