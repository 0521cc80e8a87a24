package shortener

import (
	"context"
	"time"
)

// Link is a stored short link.
type Link struct {
	// Code is the short code, base62, unique in the store.
	Code string
	// URL is the target, stored and returned byte for byte.
	URL string
	// CreatedBy identifies who created the link; empty when unknown.
	CreatedBy string
	// CreatedAt is the creation time. Stores keep at least microsecond
	// precision; the Service truncates to microseconds.
	CreatedAt time.Time
}

// Store persists links. Implementations must be safe for concurrent use.
//
// The conformance suite in package storetest states the contract in code.
type Store interface {
	// Create stores l. When l.Code is already taken it returns an error
	// matching ErrDuplicate and leaves the stored link untouched. A nil
	// error means the link is durable (as durable as the backend allows).
	Create(ctx context.Context, l Link) error
	// Get returns the link with the given code, or an error matching
	// ErrNotFound.
	Get(ctx context.Context, code string) (Link, error)
	// Ping reports whether the store is reachable and usable.
	Ping(ctx context.Context) error
	// Close releases the store's resources. It is idempotent; after Close
	// the other methods return errors.
	Close() error
}
