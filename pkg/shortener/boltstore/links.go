package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// List returns up to limit links of owner, newest first, after the
// position after: a seek in the owner index, then one lookup per link.
func (s *Store) List(ctx context.Context, owner string, after shortener.Cursor, limit int) ([]shortener.Link, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("shortener: boltstore: list: %w", err)
	}
	prefix := ownerPrefix(owner, 0)
	var links []shortener.Link
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketOwners).Cursor()
		var k []byte
		if after.IsZero() {
			k, _ = c.Seek(prefix)
		} else {
			from := ownerKey(owner, after.CreatedAt, after.Code)
			k, _ = c.Seek(from)
			if bytes.Equal(k, from) {
				k, _ = c.Next()
			}
		}
		lb := tx.Bucket(bucketLinks)
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(links) < limit; k, _ = c.Next() {
			code, ok := codeOfOwnerKey(k, len(prefix))
			if !ok {
				return fmt.Errorf("corrupt owner index entry %q", k)
			}
			v := lb.Get([]byte(code))
			if v == nil {
				continue // cannot happen: records and entries change together
			}
			l, err := decode(code, v)
			if err != nil {
				return err
			}
			l.Visits = visitsOf(tx, code)
			links = append(links, l)
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap("list", err)
	}
	return links, nil
}

// Delete removes the link of code (record, visits, index entry) when
// owner is "" or its creator, durably; otherwise shortener.ErrNotFound.
func (s *Store) Delete(ctx context.Context, code, owner string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("shortener: boltstore: delete: %w", err)
	}
	var found bool
	err := s.db.Batch(func(tx *bolt.Tx) error {
		found = false
		lb := tx.Bucket(bucketLinks)
		v := lb.Get([]byte(code))
		if v == nil {
			return nil
		}
		l, err := decode(code, v)
		if err != nil {
			return err
		}
		if owner != "" && l.CreatedBy != owner {
			return nil
		}
		found = true
		if err := lb.Delete([]byte(code)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketVisits).Delete([]byte(code)); err != nil {
			return err
		}
		if err := deleteVisits(tx, code); err != nil {
			return err
		}
		if l.CreatedBy != "" {
			return tx.Bucket(bucketOwners).Delete(ownerKey(l.CreatedBy, l.CreatedAt, code))
		}
		return nil
	})
	if err != nil {
		return s.wrap("delete", err)
	}
	if !found {
		return fmt.Errorf("shortener: boltstore: delete %q: %w", code, shortener.ErrNotFound)
	}
	return nil
}

// Visit counts one visit durably (one batched, fsynced commit) when the
// link may still redirect. A bbolt file has one process, so the limit is
// exact.
func (s *Store) Visit(ctx context.Context, code string, now time.Time) (shortener.Link, error) {
	if err := ctx.Err(); err != nil {
		return shortener.Link{}, fmt.Errorf("shortener: boltstore: visit: %w", err)
	}
	var (
		l             shortener.Link
		found, gone   bool
		decodeFailure error
	)
	err := s.db.Batch(func(tx *bolt.Tx) error {
		found, gone, decodeFailure = false, false, nil
		v := tx.Bucket(bucketLinks).Get([]byte(code))
		if v == nil {
			return nil
		}
		found = true
		l, decodeFailure = decode(code, v)
		if decodeFailure != nil {
			return nil
		}
		l.Visits = visitsOf(tx, code)
		if l.ExpiredAt(now) || l.Exhausted() {
			gone = true
			return nil
		}
		l.Visits++
		return tx.Bucket(bucketVisits).Put([]byte(code), binary.BigEndian.AppendUint64(nil, uint64(l.Visits)))
	})
	switch {
	case err != nil:
		return shortener.Link{}, s.wrap("visit", err)
	case decodeFailure != nil:
		return shortener.Link{}, decodeFailure
	case !found:
		return shortener.Link{}, shortener.ErrNotFound
	case gone:
		return l, fmt.Errorf("shortener: boltstore: visit %q: %w", code, shortener.ErrGone)
	}
	return l, nil
}

// addCounts adds counts to the visits of the links in tx; codes without
// a link are skipped.
func addCounts(tx *bolt.Tx, counts map[string]int64) error {
	lb, vb := tx.Bucket(bucketLinks), tx.Bucket(bucketVisits)
	for code, n := range counts {
		key := []byte(code)
		if lb.Get(key) == nil {
			continue
		}
		var cur uint64
		if v := vb.Get(key); len(v) == 8 {
			cur = binary.BigEndian.Uint64(v)
		}
		if err := vb.Put(key, binary.BigEndian.AppendUint64(nil, cur+uint64(n))); err != nil {
			return err
		}
	}
	return nil
}
