// Package boltstore is the embedded, single-file shortener.Store, built on
// bbolt (go.etcd.io/bbolt). It is the default store of cmd/shortener.
//
// Durability: Create returns only after the transaction holding the link
// has been committed and fsynced, so an acknowledged link survives a crash
// or power loss right after the answer. Concurrent Creates are grouped with
// bbolt's db.Batch so that they share one commit and one fsync.
//
// A bbolt file can be opened by one process at a time: run one replica per
// file, or use pgstore for more.
package boltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// DefaultPath is the default database file.
const DefaultPath = "./data/shortener.db"

var (
	bucketLinks  = []byte("links")
	bucketMeta   = []byte("meta")
	bucketOwners = []byte("owners") // owner index: see ownerKey
	bucketVisits = []byte("visits") // code -> visits, uint64 big-endian
	keyVersion   = []byte("schema_version")
)

// schemaVersion is the version of the on-disk layout written by this code:
// 1 had the links bucket only; 2 added expiry, visit limits, the visits
// bucket and the owner index; 3 the visit statistics buckets (visitlog,
// visitdays: see visits.go); 4 grouped raw visits (one visitlog entry per
// link and hour of a batch; the per-visit entries of schema 3 are read as
// they are, so a schema 3 file needs only its version changed); 5 counted
// items in them (the visits of one second with the same dimensions: read
// alongside the older entries, so again only the version changes). A
// binary refuses a file of a newer schema rather than misreading it.
const schemaVersion = 5

// Options configure Open. Zero values get the defaults in brackets.
type Options struct {
	// MaxBatchDelay is how long a Create waits for others to share its
	// commit. [2ms]
	MaxBatchDelay time.Duration
	// MaxBatchSize is the largest number of Creates in one commit. [1000]
	MaxBatchSize int
	// LockTimeout is how long Open waits for the file lock held by another
	// process before failing. [1s]
	LockTimeout time.Duration
}

// Store is a bbolt-backed shortener.Store.
type Store struct {
	db        *bolt.DB
	closeOnce sync.Once
	closeErr  error
}

var (
	_ shortener.Store          = (*Store)(nil)
	_ shortener.RedirectGetter = (*Store)(nil)
)

// Open opens (creating if needed, with its parent directories) the database
// file at path ("" means DefaultPath) and checks its schema version.
func Open(path string, o Options) (*Store, error) {
	if path == "" {
		path = DefaultPath
	}
	if o.MaxBatchDelay <= 0 {
		o.MaxBatchDelay = 2 * time.Millisecond
	}
	if o.MaxBatchSize <= 0 {
		o.MaxBatchSize = 1000
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = time.Second
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("shortener: boltstore: create directory: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: o.LockTimeout})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			err = fmt.Errorf("%w (is another process using the file?)", err)
		}
		return nil, fmt.Errorf("shortener: boltstore: open %s: %w", path, err)
	}
	db.MaxBatchDelay = o.MaxBatchDelay
	db.MaxBatchSize = o.MaxBatchSize
	if err := migrate(db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("shortener: boltstore: %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// migrate brings the file to schemaVersion: version 1 files get the new
// buckets and an owner index of their links, in one transaction.
func migrate(db *bolt.DB) error {
	return db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		var current uint64
		if v := meta.Get(keyVersion); v != nil {
			if len(v) != 8 {
				return errors.New("corrupt schema version")
			}
			if current = binary.BigEndian.Uint64(v); current > schemaVersion {
				return fmt.Errorf("schema version %d is newer than this binary's (%d)", current, schemaVersion)
			}
		}
		links, err := tx.CreateBucketIfNotExists(bucketLinks)
		if err != nil {
			return err
		}
		owners, err := tx.CreateBucketIfNotExists(bucketOwners)
		if err != nil {
			return err
		}
		for _, name := range [][]byte{bucketVisits, bucketVisitLog, bucketVisitDays} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		if current == 1 {
			err := links.ForEach(func(k, v []byte) error {
				l, err := decode(string(k), v)
				if err != nil {
					return err
				}
				if l.CreatedBy != "" {
					return owners.Put(ownerKey(l.CreatedBy, l.CreatedAt, l.Code), nil)
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("migrate to version 2: %w", err)
			}
		}
		return meta.Put(keyVersion, binary.BigEndian.AppendUint64(nil, schemaVersion))
	})
}

// Create stores l durably, or returns an error matching
// shortener.ErrDuplicate when its code is taken.
func (s *Store) Create(ctx context.Context, l shortener.Link) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("shortener: boltstore: create: %w", err)
	}
	key, val := []byte(l.Code), encode(l)
	var dup bool
	// The function may run more than once (bbolt retries a batch without a
	// failed member), so it sets dup on every run and never fails for a
	// duplicate: a failure would roll back the whole batch.
	err := s.db.Batch(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLinks)
		if b.Get(key) != nil {
			dup = true
			return nil
		}
		dup = false
		if err := b.Put(key, val); err != nil {
			return err
		}
		return putExtras(tx, l)
	})
	if err != nil {
		return s.wrap("create", err)
	}
	if dup {
		return fmt.Errorf("shortener: boltstore: create %q: %w", l.Code, shortener.ErrDuplicate)
	}
	return nil
}

// Import stores links in one transaction with one fsync, for bulk loads
// (migrations, benchmarks): much faster than one Create per link. It is all
// or nothing: when a code is taken, or appears twice in links, nothing is
// stored and the error matches shortener.ErrDuplicate. Links are written in
// code order, which keeps the file compact; split very large loads (more
// than about 100,000 links) into several calls to bound memory.
func (s *Store) Import(ctx context.Context, links []shortener.Link) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("shortener: boltstore: import: %w", err)
	}
	sorted := slices.Clone(links)
	slices.SortFunc(sorted, func(a, b shortener.Link) int { return strings.Compare(a.Code, b.Code) })
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLinks)
		if len(sorted) > 0 && b.Stats().KeyN == 0 {
			// Appending ascending keys to an empty bucket: pack pages full.
			b.FillPercent = 1
		}
		for i, l := range sorted {
			key := []byte(l.Code)
			if (i > 0 && sorted[i-1].Code == l.Code) || b.Get(key) != nil {
				return fmt.Errorf("shortener: boltstore: import %q: %w", l.Code, shortener.ErrDuplicate)
			}
			if err := b.Put(key, encode(l)); err != nil {
				return err
			}
			if err := putExtras(tx, l); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, shortener.ErrDuplicate) {
			return err
		}
		return s.wrap("import", err)
	}
	return nil
}

// Get returns the link with the given code, or shortener.ErrNotFound.
func (s *Store) Get(_ context.Context, code string) (shortener.Link, error) {
	return s.get(code, true)
}

// GetRedirect is Get without the visit count of a link without
// MaxVisits (shortener.RedirectGetter): it is kept in another bucket, a
// second look-up that a redirect does not need.
func (s *Store) GetRedirect(_ context.Context, code string) (shortener.Link, error) {
	return s.get(code, false)
}

// get reads the link of code, with its visit count when visits or when
// the link has MaxVisits.
func (s *Store) get(code string, visits bool) (shortener.Link, error) {
	var (
		l     shortener.Link
		found bool
		derr  error
	)
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketLinks).Get([]byte(code))
		if v == nil {
			return nil
		}
		found = true
		l, derr = decode(code, v)
		if visits || l.Limited() {
			l.Visits = visitsOf(tx, code)
		}
		return nil
	})
	if err != nil {
		return shortener.Link{}, s.wrap("get", err)
	}
	if derr != nil {
		return shortener.Link{}, derr
	}
	if !found {
		return shortener.Link{}, shortener.ErrNotFound
	}
	return l, nil
}

// Ping checks that the database is open and readable.
func (s *Store) Ping(context.Context) error {
	err := s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketLinks) == nil {
			return errors.New("links bucket missing")
		}
		return nil
	})
	if err != nil {
		return s.wrap("ping", err)
	}
	return nil
}

// Close waits for running transactions and closes the file. It is
// idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if err := s.db.Close(); err != nil {
			s.closeErr = fmt.Errorf("shortener: boltstore: close: %w", err)
		}
	})
	return s.closeErr
}

func (s *Store) wrap(op string, err error) error {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("shortener: boltstore: %s: %w", op, shortener.ErrClosed)
	}
	return fmt.Errorf("shortener: boltstore: %s: %w", op, err)
}
