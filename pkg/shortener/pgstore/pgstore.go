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
// Open applies the schema migrations that the database lacks (goose, with
// the SQL files of migrations/ embedded), each in its own transaction,
// under a session-level advisory lock, so replicas may start together.
// The applied versions are recorded in the table VersionTable; a database
// whose schema is newer than the binary's is refused.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// Store is a PostgreSQL-backed shortener.Store.
type Store struct {
	pool        *pgxpool.Pool
	closeOnce   sync.Once
	batchPruned atomic.Int64 // Unix nanoseconds of the last pruneBatches
}

var _ shortener.Store = (*Store)(nil)

// Open connects to the database named by dsn, checks the connection and
// migrates the schema. A DSN that does not parse gives an error matching
// ErrInvalidDSN; PostgreSQL refusing for a reason no retry fixes (no such
// database or role, a wrong password, ...) one matching ErrRefused, with
// PostgreSQL's reason; other errors (the server does not answer) may pass.
func Open(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// ParseConfig's error is not wrapped: it holds the DSN, password
		// included.
		return nil, fmt.Errorf("%w: %s", ErrInvalidDSN, DSNProblem(err))
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("shortener: pgstore: create pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, openError("connect", err)
	}
	if err := migrate(ctx, pool, slog.New(slog.DiscardHandler)); err != nil {
		pool.Close()
		return nil, openError("migrate", err)
	}
	return &Store{pool: pool}, nil
}

// ErrInvalidDSN: Open was given a connection string that does not parse
// (a configuration error, unlike a database that does not answer).
var ErrInvalidDSN = errors.New("shortener: pgstore: invalid connection string")

// DSNProblem says what is wrong in a DSN that pgxpool.ParseConfig (or
// Open) refused, without quoting the DSN: e.g. "cannot parse
// pool_max_conns (strconv.ParseInt: parsing "abc": invalid syntax)". The
// reason is what pgx writes after the quoted DSN.
func DSNProblem(err error) string {
	// net/url's errors quote the URL, password included.
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		return "not a valid URL: " + ue.Err.Error()
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, "`: "); i >= 0 {
		return msg[i+len("`: "):]
	}
	return "invalid connection string"
}

// uniqueViolation is the SQLSTATE of a unique constraint violation.
const uniqueViolation = "23505"

// Create inserts l, or returns an error matching shortener.ErrDuplicate when
// its code is taken. A nil error means the transaction committed (durable
// under PostgreSQL's default synchronous_commit).
func (s *Store) Create(ctx context.Context, l shortener.Link) error {
	_, err := s.pool.Exec(ctx,
		`INSERT INTO shortener_links (code, url, created_by, created_at, expires_at, max_visits, visits)
		 VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		l.Code, l.URL, l.CreatedBy, l.CreatedAt, nullTime(l.ExpiresAt), nullInt(l.MaxVisits), l.Visits)
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
	l, err := scanLink(code, s.pool.QueryRow(ctx, `SELECT `+linkColumns+` FROM shortener_links WHERE code = $1`, code))
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return shortener.Link{}, shortener.ErrNotFound
		}
		return shortener.Link{}, s.wrap("get", err)
	}
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

// linkColumns are the columns scanLink reads, after the code.
const linkColumns = `url, created_by, created_at, expires_at, max_visits, visits`

// scanLink reads linkColumns.
func scanLink(code string, row pgx.Row) (shortener.Link, error) {
	l := shortener.Link{Code: code}
	var (
		exp  *time.Time
		maxV *int64
	)
	if err := row.Scan(&l.URL, &l.CreatedBy, &l.CreatedAt, &exp, &maxV, &l.Visits); err != nil {
		return shortener.Link{}, err
	}
	l.CreatedAt = l.CreatedAt.UTC()
	if exp != nil {
		l.ExpiresAt = exp.UTC()
	}
	if maxV != nil {
		l.MaxVisits = *maxV
	}
	return l, nil
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func nullInt(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

func (s *Store) wrap(op string, err error) error {
	return fmt.Errorf("shortener: pgstore: %s: %w", op, err)
}
