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
	bucketLinks = []byte("links")
	bucketMeta  = []byte("meta")
	keyVersion  = []byte("schema_version")
)

// schemaVersion is the version of the on-disk layout written by this code.
const schemaVersion = 1

// recordV1 is the first byte of a link record (see encode).
const recordV1 = 1

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

var _ shortener.Store = (*Store)(nil)

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

func migrate(db *bolt.DB) error {
	return db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if v := meta.Get(keyVersion); v != nil {
			if len(v) != 8 {
				return errors.New("corrupt schema version")
			}
			if got := binary.BigEndian.Uint64(v); got > schemaVersion {
				return fmt.Errorf("schema version %d is newer than this binary's (%d)", got, schemaVersion)
			}
		}
		if _, err := tx.CreateBucketIfNotExists(bucketLinks); err != nil {
			return err
		}
		return meta.Put(keyVersion, binary.BigEndian.AppendUint64(nil, schemaVersion))
	})
}

// encode lays a link out as: version byte, created_at (varint Unix
// microseconds), len(created_by) (uvarint), created_by, url (the rest).
func encode(l shortener.Link) []byte {
	b := make([]byte, 0, 1+2*binary.MaxVarintLen64+len(l.CreatedBy)+len(l.URL))
	b = append(b, recordV1)
	b = binary.AppendVarint(b, l.CreatedAt.UnixMicro())
	b = binary.AppendUvarint(b, uint64(len(l.CreatedBy)))
	b = append(b, l.CreatedBy...)
	return append(b, l.URL...)
}

// decode parses a record; v may be memory-mapped, so everything is copied.
func decode(code string, v []byte) (shortener.Link, error) {
	// The error is built only when needed: decode is on the redirect path.
	bad := func() error { return fmt.Errorf("shortener: boltstore: corrupt record for %q", code) }
	if len(v) < 1 || v[0] != recordV1 {
		return shortener.Link{}, bad()
	}
	v = v[1:]
	us, n := binary.Varint(v)
	if n <= 0 {
		return shortener.Link{}, bad()
	}
	v = v[n:]
	ln, n := binary.Uvarint(v)
	if n <= 0 || ln > uint64(len(v)-n) {
		return shortener.Link{}, bad()
	}
	v = v[n:]
	return shortener.Link{
		Code:      code,
		CreatedBy: string(v[:ln]),
		URL:       string(v[ln:]),
		CreatedAt: time.UnixMicro(us).UTC(),
	}, nil
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
		return b.Put(key, val)
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
