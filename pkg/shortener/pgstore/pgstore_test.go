package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/pgstore"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/storetest"
)

// testDSN returns TEST_POSTGRES_DSN, skipping the test when it is unset,
// or failing it when IDP_REQUIRE_POSTGRES=1 (CI).
func testDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("IDP_REQUIRE_POSTGRES") == "1" {
			t.Fatal("TEST_POSTGRES_DSN is not set but IDP_REQUIRE_POSTGRES=1: the PostgreSQL suite must run")
		}
		t.Skip("TEST_POSTGRES_DSN not set; skipping the PostgreSQL suite " +
			"(e.g. TEST_POSTGRES_DSN=postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	return dsn
}

// schemaDSN creates a fresh schema, dropped at cleanup, and returns dsn with
// search_path pointing at it, so that tests are independent and parallel.
func schemaDSN(t testing.TB) (string, string) {
	t.Helper()
	dsn := testDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to TEST_POSTGRES_DSN: %v", err)
	}
	defer conn.Close(ctx)
	schema := "shortener_test_" + hex.EncodeToString([]byte(rand.Text())[:6])
	schema = strings.ToLower(schema)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("cleanup connect: %v", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	return withParam(t, dsn, "search_path", schema), schema
}

func withParam(t testing.TB, dsn, k, v string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("TEST_POSTGRES_DSN must be a postgres:// URL")
	}
	q := u.Query()
	q.Set(k, v)
	u.RawQuery = q.Encode()
	return u.String()
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
		return open(t, withParam(t, dsn, "pool_max_conns", "8"))
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
