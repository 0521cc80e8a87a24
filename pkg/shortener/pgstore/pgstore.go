// Package pgstore is the PostgreSQL shortener.Store (pgx v5, pgxpool), the
// store for running more than one replica of the shortener.
//
// Open takes a pgx connection string: a URL
// ("postgres://user:pass@host:5432/db?sslmode=verify-full&pool_max_conns=20")
// or key/value pairs. Pool settings in it (pool_max_conns, pool_min_conns,
// pool_max_conn_lifetime, pool_max_conn_idle_time,
// pool_health_check_period, ...) are honoured, and other run-time
// parameters such as search_path are passed to the server.
//
// Open applies the schema migrations that the database lacks, in one
// transaction under an advisory lock, so replicas may start together. The
// applied versions are recorded in the table shortener_schema_migrations.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// Store is a PostgreSQL-backed shortener.Store.
type Store struct {
	pool      *pgxpool.Pool
	closeOnce sync.Once
}

var _ shortener.Store = (*Store)(nil)

// Open connects to the database named by dsn, checks the connection and
// migrates the schema.
func Open(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The error of ParseConfig may quote the DSN, password included.
		return nil, errors.New("shortener: pgstore: invalid connection string")
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("shortener: pgstore: create pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("shortener: pgstore: connect: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("shortener: pgstore: migrate: %w", err)
	}
	return &Store{pool: pool}, nil
}

// migrations are applied in order; never edit one that was released, add a
// new one.
var migrations = []string{
	1: `CREATE TABLE IF NOT EXISTS shortener_links (
		code       text        PRIMARY KEY,
		url        text        NOT NULL,
		created_by text        NOT NULL DEFAULT '',
		created_at timestamptz NOT NULL DEFAULT now()
	)`,
}

// advisoryLockKey serialises migrations across replicas ("shorten" in hex).
const advisoryLockKey = 0x73686f7274656e

func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(advisoryLockKey)); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS shortener_schema_migrations (
		version    integer     PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return err
	}
	var current int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM shortener_schema_migrations`).Scan(&current); err != nil {
		return err
	}
	if current > len(migrations)-1 {
		return fmt.Errorf("database schema version %d is newer than this binary's (%d)", current, len(migrations)-1)
	}
	for v := current + 1; v < len(migrations); v++ {
		if _, err := tx.Exec(ctx, migrations[v]); err != nil {
			return fmt.Errorf("version %d: %w", v, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO shortener_schema_migrations (version) VALUES ($1)`, v); err != nil {
			return fmt.Errorf("version %d: %w", v, err)
		}
	}
	return tx.Commit(ctx)
}

// uniqueViolation is the SQLSTATE of a unique constraint violation.
const uniqueViolation = "23505"

// Create inserts l, or returns an error matching shortener.ErrDuplicate when
// its code is taken. A nil error means the transaction committed (durable
// under PostgreSQL's default synchronous_commit).
func (s *Store) Create(ctx context.Context, l shortener.Link) error {
	_, err := s.pool.Exec(ctx,
		`INSERT INTO shortener_links (code, url, created_by, created_at) VALUES ($1, $2, $3, $4)`,
		l.Code, l.URL, l.CreatedBy, l.CreatedAt)
	if err != nil {
		if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == uniqueViolation {
			return fmt.Errorf("shortener: pgstore: create %q: %w", l.Code, shortener.ErrDuplicate)
		}
		return s.wrap("create", err)
	}
	return nil
}

// Get returns the link with the given code, or shortener.ErrNotFound.
func (s *Store) Get(ctx context.Context, code string) (shortener.Link, error) {
	l := shortener.Link{Code: code}
	err := s.pool.QueryRow(ctx,
		`SELECT url, created_by, created_at FROM shortener_links WHERE code = $1`, code).
		Scan(&l.URL, &l.CreatedBy, &l.CreatedAt)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return shortener.Link{}, shortener.ErrNotFound
		}
		return shortener.Link{}, s.wrap("get", err)
	}
	l.CreatedAt = l.CreatedAt.UTC()
	return l, nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return s.wrap("ping", err)
	}
	return nil
}

// Close closes the pool, waiting for connections in use to be released. It
// is idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(s.pool.Close)
	return nil
}

// Stat returns the pool's statistics, for metrics.
func (s *Store) Stat() *pgxpool.Stat { return s.pool.Stat() }

func (s *Store) wrap(op string, err error) error {
	return fmt.Errorf("shortener: pgstore: %s: %w", op, err)
}
