package pgstore_test

import (
	"context"
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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
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
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n, maxV int
	if err := conn.QueryRow(ctx, `SELECT count(*), max(version) FROM shortener_schema_migrations`).Scan(&n, &maxV); err != nil {
		t.Fatal(err)
	}
	if n != 1 || maxV != 1 {
		t.Fatalf("migrations table: %d rows, max version %d; want 1, 1", n, maxV)
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
	ctx := context.Background()
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
	}
}

func TestInvalidDSNDoesNotLeakPassword(t *testing.T) {
	_, err := pgstore.Open(context.Background(), "postgres://u:s3cret@host:notaport/db")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("error = %v", err)
	}
}

func TestUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := pgstore.Open(ctx, "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	if err == nil {
		t.Fatal("Open of an unreachable server succeeded")
	}
}
