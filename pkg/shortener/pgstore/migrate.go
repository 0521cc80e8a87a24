package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// migrationFiles are the schema migrations, applied in version order by
// goose. Never edit a released one: add a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// VersionTable is the table in which goose records the applied
// migrations.
const VersionTable = "shortener_goose_db_version"

// legacyVersionTable is the first release's own version table; see
// migrations/00002_*.sql.
const (
	legacyVersionTable = "shortener_schema_migrations"
	legacyGuardVersion = 2
)

// advisoryLockKey serialises migrations across replicas ("shorten" in hex).
const advisoryLockKey = 0x73686f7274656e

// migrate applies the migrations the database lacks, under a
// session-level advisory lock so that replicas may start together, and
// refuses a database whose schema is newer than this binary's.
func migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, legacyVersionTable).Scan(&exists); err != nil {
		return fmt.Errorf("read the schema version: %w", err)
	}
	if exists {
		var legacy *int
		if err := pool.QueryRow(ctx, `SELECT max(version) FROM `+legacyVersionTable).Scan(&legacy); err != nil {
			return fmt.Errorf("read the schema version: %w", err)
		}
		if legacy != nil && *legacy > legacyGuardVersion {
			return fmt.Errorf("%w (version %d)", errSchemaNewer, *legacy)
		}
	}
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(advisoryLockKey), lock.WithLockTimeout(1, 300))
	if err != nil {
		return err
	}
	db := stdlib.OpenDBFromPool(pool) // closing it leaves the pool open
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub,
		goose.WithTableName(VersionTable),
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true),
		goose.WithSlog(log))
	if err != nil {
		return err
	}
	results, err := p.Up(ctx)
	if err != nil && !errors.Is(err, goose.ErrNoNextVersion) {
		return err
	}
	for _, r := range results {
		log.InfoContext(ctx, "shortener: pgstore: migration applied", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
	}
	current, err := p.GetDBVersion(ctx)
	if err != nil {
		return err
	}
	sources := p.ListSources()
	if latest := sources[len(sources)-1].Version; current > latest {
		return fmt.Errorf("%w (version %d, this binary's %d)", errSchemaNewer, current, latest)
	}
	return nil
}
