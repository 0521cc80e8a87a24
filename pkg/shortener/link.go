package shortener

import (
	"context"
	"time"
)

// Link is a stored short link.
type Link struct {
	// Code is the short code: base62 when generated, [A-Za-z0-9_-] when
	// chosen by its creator (Options.CustomCodes). Unique in the store.
	Code string
	// URL is the target, stored and returned byte for byte.
	URL string
	// CreatedBy identifies who created the link; empty when unknown.
	CreatedBy string
	// CreatedAt is the creation time. Stores keep at least microsecond
	// precision; the Service truncates to microseconds.
	CreatedAt time.Time
	// ExpiresAt is when the link stops redirecting (410 Gone from then
	// on); the zero time means never. Microsecond precision.
	ExpiresAt time.Time
	// MaxVisits is the number of redirects the link serves before it
	// answers 410 Gone; 0 means no limit.
	MaxVisits int64
	// Visits is the number of redirects counted in the store. For links
	// without MaxVisits, the visits of the last flush interval may still
	// be in memory (see Options.VisitFlushInterval).
	Visits int64
}

// Limited reports whether the link has a visit limit: its visits are
// counted in the store, one conditional update per redirect, never cached.
func (l Link) Limited() bool { return l.MaxVisits > 0 }

// ExpiredAt reports whether the link has expired at t.
func (l Link) ExpiredAt(t time.Time) bool {
	return !l.ExpiresAt.IsZero() && !t.Before(l.ExpiresAt)
}

// Exhausted reports whether a limited link has used up its visits.
func (l Link) Exhausted() bool { return l.MaxVisits > 0 && l.Visits >= l.MaxVisits }

// Cursor is a position in an owner's list of links, which is ordered
// newest first: by CreatedAt descending, then by Code descending (byte
// order). The zero Cursor is the start of the list.
type Cursor struct {
	CreatedAt time.Time
	Code      string
}

// IsZero reports whether c is the start of the list.
func (c Cursor) IsZero() bool { return c.Code == "" && c.CreatedAt.IsZero() }

// CursorOf returns the position of l in its owner's list.
func CursorOf(l Link) Cursor { return Cursor{CreatedAt: l.CreatedAt, Code: l.Code} }

// Store persists links. Implementations must be safe for concurrent use.
//
// The conformance suite in package storetest states the contract in code.
// A store may also implement RedirectGetter, a cheaper read for redirects
// served without the redirect cache.
type Store interface {
	// Create stores l. When l.Code is already taken it returns an error
	// matching ErrDuplicate and leaves the stored link untouched. A nil
	// error means the link is durable (as durable as the backend allows).
	// l.Visits is stored as given (normally 0).
	Create(ctx context.Context, l Link) error
	// Get returns the link with the given code, or an error matching
	// ErrNotFound.
	Get(ctx context.Context, code string) (Link, error)
	// List returns up to limit links created by owner (never ""), ordered
	// newest first (see Cursor), that come strictly after the position
	// after. An owner without links gives an empty list and no error.
	List(ctx context.Context, owner string, after Cursor, limit int) ([]Link, error)
	// Delete removes the link with the given code when owner is "" or is
	// its creator; otherwise, or when there is no such link, it returns
	// an error matching ErrNotFound and changes nothing.
	Delete(ctx context.Context, code, owner string) error
	// Visit counts one visit of a link atomically: when the link exists,
	// has not expired at now and, if limited, has visits left, it adds one
	// to Visits and returns the link as updated. An expired or exhausted
	// link gives an error matching ErrGone and is left unchanged; a
	// missing one ErrNotFound. With several processes on one database,
	// exactly MaxVisits calls succeed.
	Visit(ctx context.Context, code string, now time.Time) (Link, error)
	// Edit applies e to the link of code atomically, when owner is "" or
	// is its creator, and returns the link as stored afterwards (with its
	// visits). It returns an error matching ErrNotFound when there is no
	// such link (or owner is not its creator), and one matching
	// ErrOverLimit, changing nothing, when the resulting link would have
	// a limit below the visits counted in the store. Concurrent Visit
	// calls see the link before or after the edit, never a mix.
	Edit(ctx context.Context, code, owner string, e LinkEdit) (Link, error)
	// WriteVisits writes a batch of visits counted in memory in one write
	// (one transaction where the backend has them): b.Counts added to the
	// links' Visits, and b.Events kept as statistics and added to their
	// daily aggregates. Codes without a link are ignored (the link was
	// deleted). A batch whose ID is not zero and already written is not
	// written again (see VisitBatchID). The batch is not kept after the
	// call.
	WriteVisits(ctx context.Context, b VisitBatch) error
	// PruneVisits drops the raw visits (hourly statistics) before t, not
	// their daily aggregates.
	PruneVisits(ctx context.Context, before time.Time) error
	// VisitStats answers q for the link of code: by day from the daily
	// aggregates, by hour from the raw visits. An unknown code gives
	// empty statistics. Delete removes both.
	VisitStats(ctx context.Context, code string, q StatsQuery) (VisitStats, error)
	// Ping reports whether the store is reachable and usable.
	Ping(ctx context.Context) error
	// Close releases the store's resources. It is idempotent; after Close
	// the other methods return errors.
	Close() error
}

// LinkEdit is a change to a link: the fields that are not nil are set.
type LinkEdit struct {
	// URL is the new target, already normalised (see NormalizeURL).
	URL *string
	// ExpiresAt is the new expiry; a pointer to the zero time clears it.
	ExpiresAt *time.Time
	// MaxVisits is the new visit limit; a pointer to 0 clears it.
	MaxVisits *int64
}

// IsZero reports whether e changes nothing.
func (e LinkEdit) IsZero() bool { return e.URL == nil && e.ExpiresAt == nil && e.MaxVisits == nil }

// Apply returns l with the fields of e set.
func (e LinkEdit) Apply(l Link) Link {
	if e.URL != nil {
		l.URL = *e.URL
	}
	if e.ExpiresAt != nil {
		l.ExpiresAt = *e.ExpiresAt
	}
	if e.MaxVisits != nil {
		l.MaxVisits = *e.MaxVisits
	}
	return l
}
