// Package pgtest gives tests a PostgreSQL database of their own: the DSN
// from TEST_POSTGRES_DSN (skip without it, fail with IDP_REQUIRE_POSTGRES=1
// as in CI) and a fresh schema per test, dropped at cleanup.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/testneed"
	"github.com/jackc/pgx/v5"
)

// DSN returns TEST_POSTGRES_DSN. When it is unset, the test is skipped with
// a message naming what (e.g. "the PostgreSQL suite"), or failed when
// IDP_REQUIRE_POSTGRES=1: in CI the PostgreSQL tests must run.
func DSN(t testing.TB, what string) string {
	t.Helper()
	dsn := os.Getenv("TEST_POSTGRES_DSN")
	if dsn == "" {
		testneed.Skip(t, testneed.Postgres, "TEST_POSTGRES_DSN not set; skipping %s "+
			"(e.g. TEST_POSTGRES_DSN=postgres://postgres@127.0.0.1:5432/test?sslmode=disable)", what)
	}
	return dsn
}

// Schema creates a fresh schema named prefix + a random suffix, dropped
// (CASCADE) at cleanup, and returns dsn with search_path set to it, so that
// tests are independent and can run in parallel.
func Schema(t testing.TB, dsn, prefix string) (schemaDSN, schema string) {
	t.Helper()
	WithParam(t, dsn, "search_path", "") // checks the DSN's shape first
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to TEST_POSTGRES_DSN: %v", err)
	}
	defer conn.Close(context.Background())
	schema = prefix + strings.ToLower(hex.EncodeToString([]byte(rand.Text())[:6]))
	ident := pgx.Identifier{schema}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+ident); err != nil {
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
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+ident+" CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	return WithParam(t, dsn, "search_path", schema), schema
}

// WithParam returns dsn, a postgres:// URL, with the query parameter k set
// to v (a pgx run-time or pool setting such as pool_max_conns).
func WithParam(t testing.TB, dsn, k, v string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatal("TEST_POSTGRES_DSN must be a postgres:// URL")
	}
	q := u.Query()
	q.Set(k, v)
	u.RawQuery = q.Encode()
	return u.String()
}
