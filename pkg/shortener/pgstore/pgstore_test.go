package pgstore_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idp-proxy/idp-proxy/internal/pgtest"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/pgstore"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/storetest"
)

// testDSN returns TEST_POSTGRES_DSN (skip without it; fail in CI).
func testDSN(t testing.TB) string { return pgtest.DSN(t, "the PostgreSQL suite") }

// schemaDSN returns a DSN for a fresh schema of this test, and its name.
func schemaDSN(t testing.TB) (string, string) {
	return pgtest.Schema(t, testDSN(t), "shortener_test_")
}

func open(t testing.TB, dsn string) *pgstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	testDSN(t)
	storetest.Run(t, func(t *testing.T) shortener.Store {
		dsn, _ := schemaDSN(t)
		return open(t, pgtest.WithParam(t, dsn, "pool_max_conns", "8"))
	})
}

func TestMigrationsIdempotentAndConcurrent(t *testing.T) {
	dsn, schema := schemaDSN(t)
	var wg sync.WaitGroup
	stores := make([]*pgstore.Store, 4)
	for i := range stores {
		wg.Go(func() { stores[i] = open(t, dsn) })
	}
	wg.Wait()
	for _, s := range stores {
		if s != nil {
			s.Close()
		}
	}
	s := open(t, dsn)
	defer s.Close()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n, maxV int
	if err := conn.QueryRow(ctx, `SELECT count(*), max(version_id) FROM `+pgstore.VersionTable+` WHERE version_id > 0 AND is_applied`).Scan(&n, &maxV); err != nil {
		t.Fatal(err)
	}
	if n != 4 || maxV != 4 {
		t.Fatalf("goose version table: %d rows, max version %d; want 4, 4", n, maxV)
	}
	// The first release's table says 2 as well, so that it refuses this
	// database instead of ignoring expiry and visit limits.
	if err := conn.QueryRow(ctx, `SELECT max(version) FROM shortener_schema_migrations`).Scan(&maxV); err != nil || maxV != 2 {
		t.Fatalf("legacy version table: max %d, %v; want 2", maxV, err)
	}
	var pk bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_indexes WHERE schemaname = $1 AND tablename = 'shortener_links' AND indexdef LIKE '%UNIQUE%(code)%')`, schema).Scan(&pk); err != nil {
		t.Fatal(err)
	}
	if !pk {
		t.Fatal("no unique index on shortener_links(code)")
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	dsn, _ := schemaDSN(t)
	open(t, dsn).Close()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO shortener_schema_migrations (version) VALUES (99)`); err != nil {
		t.Fatal(err)
	}
	if s, err := pgstore.Open(ctx, dsn); err == nil {
		s.Close()
		t.Fatal("Open accepted a schema newer than the binary's")
	} else if !errors.Is(err, pgstore.ErrRefused) {
		t.Fatalf("Open: %v; want an error matching ErrRefused (no retry fixes it)", err)
	}
}

func TestNewerGooseVersionRefused(t *testing.T) {
	dsn, _ := schemaDSN(t)
	open(t, dsn).Close()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO `+pgstore.VersionTable+` (version_id, is_applied) VALUES (99, true)`); err != nil {
		t.Fatal(err)
	}
	if s, err := pgstore.Open(ctx, dsn); err == nil {
		s.Close()
		t.Fatal("Open accepted a goose version newer than the binary's")
	} else if !errors.Is(err, pgstore.ErrRefused) {
		t.Fatalf("Open: %v; want an error matching ErrRefused (no retry fixes it)", err)
	}
}

// TestUpgradeFromFirstRelease opens a database that the first release
// (its own migration table, version 1) created and filled.
func TestUpgradeFromFirstRelease(t *testing.T) {
	dsn, _ := schemaDSN(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{
		`CREATE TABLE shortener_schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
		`CREATE TABLE shortener_links (code text PRIMARY KEY, url text NOT NULL, created_by text NOT NULL DEFAULT '', created_at timestamptz NOT NULL DEFAULT now())`,
		`INSERT INTO shortener_schema_migrations (version) VALUES (1)`,
		`INSERT INTO shortener_links (code, url, created_by, created_at) VALUES
			('old0001', 'https://example.com/1', 'alice', '2024-01-01T00:00:00Z'),
			('old0002', 'https://example.com/2', 'alice', '2024-01-02T00:00:00Z'),
			('old0003', 'https://example.com/3', '', '2024-01-03T00:00:00Z')`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s := open(t, dsn)
	defer s.Close()
	l, err := s.Get(ctx, "old0003")
	if err != nil || l.URL != "https://example.com/3" || l.Visits != 0 || l.MaxVisits != 0 || !l.ExpiresAt.IsZero() {
		t.Fatalf("Get = %+v, %v", l, err)
	}
	links, err := s.List(ctx, "alice", shortener.Cursor{}, 10)
	if err != nil || len(links) != 2 || links[0].Code != "old0002" || links[1].Code != "old0001" {
		t.Fatalf("List = %+v, %v", links, err)
	}
}

// TestListUsesTheOwnerIndex: the plan of a page of an owner's links reads
// the owner index, not every link.
func TestListUsesTheOwnerIndex(t *testing.T) {
	dsn, _ := schemaDSN(t)
	open(t, dsn).Close()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO shortener_links (code, url, created_by, created_at)
		SELECT 'c' || i, 'https://example.com/', 'owner' || (i % 500), now() - i * interval '1 second'
		FROM generate_series(1, 20000) AS i`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ANALYZE shortener_links`); err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	rows, err := conn.Query(ctx, `EXPLAIN SELECT code FROM shortener_links WHERE created_by = 'owner7' AND created_by <> ''
		AND (created_at, code COLLATE "C") < (now(), 'x') ORDER BY created_at DESC, code COLLATE "C" DESC LIMIT 51`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if !strings.Contains(plan.String(), "shortener_links_owner_idx") || strings.Contains(plan.String(), "Seq Scan") {
		t.Fatalf("plan does not read the owner index:\n%s", plan.String())
	}
}

func TestInvalidDSNDoesNotLeakPassword(t *testing.T) {
	_, err := pgstore.Open(t.Context(), "postgres://u:s3cret@host:notaport/db")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("error = %v", err)
	}
}

func TestUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := pgstore.Open(ctx, "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	if err == nil {
		t.Fatal("Open of an unreachable server succeeded")
	}
	if errors.Is(err, pgstore.ErrRefused) {
		t.Fatalf("Open of an unreachable server: %v matches ErrRefused; it may come up", err)
	}
}

// A DSN that does not parse is refused naming what is wrong in it, never
// quoting the password.
func TestOpenNamesTheBadParameter(t *testing.T) {
	for _, tc := range []struct{ dsn, want string }{
		{"postgres://u:secret@127.0.0.1/db?pool_max_conns=abc", "pool_max_conns"},
		{"host=127.0.0.1 password=secret connect_timeout=x", "connect_timeout"},
		{"postgres://u:sec%zzret@127.0.0.1/db", "URL"},
	} {
		_, err := pgstore.Open(t.Context(), tc.dsn)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "ret@") {
			t.Errorf("Open(%q): %v; want an error naming %q without the password", tc.dsn, err, tc.want)
		}
	}
}

// The README names every table the store creates, so that an operator
// who looks at the database finds none unexplained.
func TestReadmeNamesEveryTable(t *testing.T) {
	dsn, schema := schemaDSN(t)
	s := open(t, dsn)
	s.Close()
	conn, err := pgx.Connect(t.Context(), testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(t.Context(), `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) < 2 {
		t.Fatalf("tables %v: expected the links table and the migrations' version tables", tables)
	}
	for _, table := range tables {
		if !strings.Contains(string(readme), "`"+table+"`") {
			t.Errorf("the store creates the table %s, which README.md does not name", table)
		}
	}
}
