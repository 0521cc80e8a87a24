package boltstore

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

var _ shortener.Store = (*Store)(nil)

// Edit applies e to the link of code when owner is "" or its creator, in
// one durable (fsynced) transaction. The record is rewritten; its owner
// index entry and its visits stay as they are.
func (s *Store) Edit(ctx context.Context, code, owner string, e shortener.LinkEdit) (shortener.Link, error) {
	if err := ctx.Err(); err != nil {
		return shortener.Link{}, fmt.Errorf("shortener: boltstore: edit: %w", err)
	}
	var (
		l                shortener.Link
		found, overLimit bool
	)
	err := s.db.Batch(func(tx *bolt.Tx) error {
		found, overLimit = false, false
		lb := tx.Bucket(bucketLinks)
		v := lb.Get([]byte(code))
		if v == nil {
			return nil
		}
		old, err := decode(code, v)
		if err != nil {
			return err
		}
		if owner != "" && old.CreatedBy != owner {
			return nil
		}
		found = true
		l = e.Apply(old)
		l.Visits = visitsOf(tx, code)
		if l.MaxVisits > 0 && l.Visits > l.MaxVisits {
			overLimit = true
			return nil
		}
		return lb.Put([]byte(code), encode(l))
	})
	switch {
	case err != nil:
		return shortener.Link{}, s.wrap("edit", err)
	case !found:
		return shortener.Link{}, fmt.Errorf("shortener: boltstore: edit %q: %w", code, shortener.ErrNotFound)
	case overLimit:
		return shortener.Link{}, fmt.Errorf("shortener: boltstore: edit %q: %w", code, shortener.ErrOverLimit)
	}
	return l, nil
}
