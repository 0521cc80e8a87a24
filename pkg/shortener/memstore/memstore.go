// Package memstore is an in-memory shortener.Store, for tests and demos.
// Links are lost when the process exits.
package memstore

import (
	"context"
	"fmt"
	"sync"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// Store is an in-memory shortener.Store. The zero value is not usable; call
// New.
type Store struct {
	mu     sync.RWMutex
	links  map[string]shortener.Link
	closed bool
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
