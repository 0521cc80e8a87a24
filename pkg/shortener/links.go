package shortener

import (
	"context"
	"fmt"
)

// Caller is who asks for or deletes a link.
type Caller struct {
	// ID is the caller's identity (for a Handler: HandlerOptions.Owner);
	// "" means none.
	ID string
	// Admin reports whether the caller is an administrator (for a
	// Handler: holds one of HandlerOptions.AdminRoles): an administrator
	// may read and delete every link.
	Admin bool
}

// Visit resolves code for a redirect by v and records the visit: its
// count, for a link with MaxVisits through the store's conditional update
// (exact across replicas, never cached), for any other link in memory
// (written in batches); and with Options.VisitStats, what the statistics
// keep of v (written in the same batches). An expired or used-up link
// gives an error matching ErrGone; unknown and malformed codes
// ErrNotFound.
func (s *Service) Visit(ctx context.Context, code string, v Visitor) (Link, error) {
	l, _, err := s.visit(ctx, code, &v)
	return l, err
}

// visit is Visit; with v nil (HEAD requests) it checks without
// recording anything. location is the redirect cache's Location header
// value of the link, nil when it has none (see lookup).
func (s *Service) visit(ctx context.Context, code string, v *Visitor) (l Link, location []string, err error) {
	if !s.ValidCode(code) {
		return Link{}, nil, ErrNotFound
	}
	// One clock read serves the cache's freshness, the expiry and the
	// visit's second: on some machines (virtual ones, with a slow clock
	// source) reading the clock is a measurable part of a redirect.
	now := s.now()
	l, location, err = s.lookup(ctx, code, now, true)
	if err != nil {
		return Link{}, nil, err
	}
	if l.ExpiredAt(now) {
		return l, nil, ErrGone
	}
	if !l.Limited() {
		if v != nil {
			s.visits.add(l.Code, true, v, now.Unix()) // the cache's string, not the request's
		}
		return l, location, nil
	}
	if l.Exhausted() {
		return l, nil, ErrGone
	}
	if v == nil {
		return l, nil, nil
	}
	if l, err = s.store.Visit(ctx, code, now); err != nil {
		return l, nil, err
	}
	if s.visits.stats != nil {
		s.visits.add(l.Code, false, v, now.Unix())
	}
	return l, nil, nil
}

// withPending adds the visits counted here and not yet written.
func (s *Service) withPending(l Link) Link {
	if !l.Limited() {
		l.Visits += s.visits.pending(l.Code)
	}
	return l
}

// MaxListLimit is the largest page of List.
const MaxListLimit = 1000

// List returns up to limit (1 to MaxListLimit) links of owner, newest
// first, after the position after (see Cursor); visit counts include the
// visits counted in memory here. next is the position to continue from,
// or the zero Cursor at the end of the list.
func (s *Service) List(ctx context.Context, owner string, after Cursor, limit int) (links []Link, next Cursor, err error) {
	if owner == "" {
		return nil, Cursor{}, ErrNoIdentity
	}
	limit = min(max(limit, 1), MaxListLimit)
	// One more than asked tells whether there is a next page.
	links, err = s.store.List(ctx, owner, after, limit+1)
	if err != nil {
		return nil, Cursor{}, fmt.Errorf("shortener: list links: %w", err)
	}
	if len(links) > limit {
		links = links[:limit]
		next = CursorOf(links[limit-1])
	}
	for i := range links {
		links[i] = s.withPending(links[i])
	}
	return links, next, nil
}

// LinkFor returns the link with the given code when c may see it (its
// creator or an administrator); otherwise ErrNotFound, so that codes
// cannot be probed.
func (s *Service) LinkFor(ctx context.Context, code string, c Caller) (Link, error) {
	if c.ID == "" {
		return Link{}, ErrNoIdentity
	}
	if !s.ValidCode(code) {
		return Link{}, ErrNotFound
	}
	l, err := s.store.Get(ctx, code)
	if err != nil {
		return Link{}, err
	}
	if !c.Admin && l.CreatedBy != c.ID {
		return Link{}, ErrNotFound
	}
	return s.withPending(l), nil
}

// Delete removes the link with the given code when c is its creator or an
// administrator; otherwise, or when there is no such link, it returns
// ErrNotFound. The link stops redirecting at once here; other replicas
// serve it from their cache for at most Options.CacheTTL.
func (s *Service) Delete(ctx context.Context, code string, c Caller) error {
	if c.ID == "" {
		return ErrNoIdentity
	}
	if !s.ValidCode(code) {
		return ErrNotFound
	}
	owner := c.ID
	if c.Admin {
		owner = ""
	}
	if err := s.store.Delete(ctx, code, owner); err != nil {
		return err
	}
	s.forget(code)
	return nil
}

// forget drops what this replica keeps about code: its cache entry and
// its pending visits.
func (s *Service) forget(code string) {
	if s.cache != nil {
		s.cache.remove(code)
	}
	s.visits.drop(code)
}
