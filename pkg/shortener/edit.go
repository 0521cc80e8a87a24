package shortener

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Edit is a change asked for by a caller: the fields that are set change,
// as LinkEdit says; the values are validated like those of NewLink.
type Edit struct {
	// URL, when not nil, is the new target (see NormalizeURL).
	URL *string
	// ExpiresAt, when not nil, is the new expiry: the zero time clears
	// it, any other time must be in the future. Truncated to
	// microseconds.
	ExpiresAt *time.Time
	// MaxVisits, when not nil, is the new limit: 0 clears it, otherwise
	// between 1 and MaxMaxVisits and not below the visits already served.
	MaxVisits *int64
}

// Edit changes the link of code when c is its creator or an
// administrator, and returns it as changed. Invalid values give an error
// matching ErrInvalidURL or ErrInvalidInput; a limit below the visits
// already counted one matching ErrOverLimit; an unknown link, or one of
// someone else, ErrNotFound.
//
// This replica serves the new link at once; the others within
// Options.CacheTTL (their cache entries expire). Visits of an unlimited
// link that other replicas count in memory reach the store within their
// flush interval: when a limit is added, they count toward it late, so
// for one cache TTL plus one flush interval the link may serve a few
// visits beyond the new limit on other replicas (never on this one).
func (s *Service) Edit(ctx context.Context, code string, c Caller, e Edit) (Link, error) {
	if c.ID == "" {
		return Link{}, ErrNoIdentity
	}
	if !s.ValidCode(code) {
		return Link{}, ErrNotFound
	}
	var le LinkEdit
	if e.URL != nil {
		u, err := NormalizeURL(*e.URL)
		if err != nil {
			return Link{}, err
		}
		le.URL = &u
	}
	if e.ExpiresAt != nil {
		t := e.ExpiresAt.UTC().Truncate(time.Microsecond)
		if !t.IsZero() && !t.After(s.now()) {
			return Link{}, &InputError{Field: "expires_at", Reason: "must be in the future"}
		}
		if e.ExpiresAt.IsZero() {
			t = time.Time{}
		}
		le.ExpiresAt = &t
	}
	if e.MaxVisits != nil {
		if n := *e.MaxVisits; n < 0 || n > MaxMaxVisits {
			return Link{}, &InputError{Field: "max_visits", Reason: "must be an integer from 1 to 9007199254740991, or null"}
		}
		n := *e.MaxVisits
		le.MaxVisits = &n
		// The visits of an unlimited link counted here are written first,
		// so that the store compares the new limit with all of them.
		if n > 0 && s.visits.pending(code) > 0 {
			if err := s.visits.flush(ctx); err != nil {
				return Link{}, fmt.Errorf("shortener: edit link: %w", err)
			}
		}
	}
	if le.IsZero() {
		return Link{}, &InputError{Field: "body", Reason: "nothing to change: give url, expires_at or max_visits"}
	}
	owner := c.ID
	if c.Admin {
		owner = ""
	}
	l, err := s.store.Edit(ctx, code, owner, le)
	if err != nil {
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrOverLimit) {
			return Link{}, err
		}
		return Link{}, fmt.Errorf("shortener: edit link: %w", err)
	}
	if s.cache != nil {
		s.cache.remove(code)
	}
	return s.withPending(l), nil
}
