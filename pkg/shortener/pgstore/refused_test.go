package pgstore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/idp-proxy/idp-proxy/internal/pgtest"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/pgstore"
)

// testRole creates a role of its own for this test, with the given
// options (e.g. "NOLOGIN"), dropped at cleanup; it returns its name.
func testRole(t *testing.T, options string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	name := "shortener_role_" + strings.ToLower(rand.Text()[:8])
	if _, err := conn.Exec(ctx, "CREATE ROLE "+pgx.Identifier{name}.Sanitize()+" "+options); err != nil {
		t.Fatalf("create role: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, testDSN(t))
		if err != nil {
			t.Errorf("cleanup connect: %v", err)
			return
		}
		defer conn.Close(context.Background())
		// DROP OWNED also revokes what was granted to it.
		ident := pgx.Identifier{name}.Sanitize()
		if _, err := conn.Exec(ctx, "DROP OWNED BY "+ident+"; DROP ROLE "+ident); err != nil {
			t.Errorf("drop role: %v", err)
		}
	})
	return name
}

// serverHasTLS reports whether the test server accepts TLS connections.
func serverHasTLS(t *testing.T) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var ssl string
	if err := conn.QueryRow(ctx, "SHOW ssl").Scan(&ssl); err != nil {
		t.Fatal(err)
	}
	return ssl == "on"
}

// grant runs a GRANT statement as the test's role.
func grant(t *testing.T, stmt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// withUserDB returns dsn with its user and/or database replaced ("" keeps
// it).
func withUserDB(t *testing.T, dsn, user, db string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		u.User = url.User(user)
	}
	if db != "" {
		u.Path = "/" + db
	}
	return u.String()
}

// PostgreSQL refusing the store for a reason no retry fixes gives an
// error matching ErrRefused that carries PostgreSQL's own reason, so that
// the shortener stops its start with it instead of waiting for a server
// that answers every time.
func TestOpenRefusedWithPostgresReason(t *testing.T) {
	dsn, schema := schemaDSN(t)
	// A role that may use the schema but not create in it.
	unprivileged := testRole(t, "LOGIN")
	grant(t, "GRANT USAGE ON SCHEMA "+pgx.Identifier{schema}.Sanitize()+" TO "+pgx.Identifier{unprivileged}.Sanitize())
	for _, tc := range []struct {
		name, dsn, want string
	}{
		{"no such database", withUserDB(t, dsn, "", "shortener_no_such_db"), `database "shortener_no_such_db" does not exist (SQLSTATE 3D000)`},
		{"no such role", withUserDB(t, dsn, "shortener_no_such_role", ""), `role "shortener_no_such_role" does not exist (SQLSTATE 28000)`},
		{"role may not log in", withUserDB(t, dsn, testRole(t, "NOLOGIN"), ""), `is not permitted to log in (SQLSTATE 28000)`},
		{"untrusted server certificate", pgtest.WithParam(t, dsn, "sslmode", "verify-full"), `its TLS certificate is not trusted`},
		{"role may not create the tables", withUserDB(t, dsn, unprivileged, ""), `(SQLSTATE 42501)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.dsn, "verify-full") && !serverHasTLS(t) {
				t.Skip("the test server has ssl off")
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			s, err := pgstore.Open(ctx, tc.dsn)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, pgstore.ErrRefused) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v\nwant an error matching ErrRefused with %q", err, tc.want)
			}
		})
	}
}

// refusingServer is a PostgreSQL front door on loopback that answers every
// startup with the error code: for the refusals the test server cannot be
// made to give (its pg_hba.conf trusts every local connection, so no
// password is ever wrong) and for the errors that must stay retryable.
func refusingServer(t *testing.T, code, message string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				be := pgproto3.NewBackend(c, c)
				for {
					msg, err := be.ReceiveStartupMessage()
					if err != nil {
						return
					}
					if _, ok := msg.(*pgproto3.SSLRequest); ok {
						if _, err := c.Write([]byte("N")); err != nil {
							return
						}
						continue
					}
					be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: code, Message: message})
					_ = be.Flush()
					return
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func TestOpenRefusalsBySQLState(t *testing.T) {
	for _, tc := range []struct {
		code, message string
		refused       bool
	}{
		{"28P01", `password authentication failed for user "app"`, true},
		{"28000", `no pg_hba.conf entry for host "127.0.0.1", user "app", database "links", no encryption`, true},
		{"57P03", "the database system is starting up", false},
		{"53300", "sorry, too many clients already", false},
	} {
		t.Run(tc.code, func(t *testing.T) {
			addr := refusingServer(t, tc.code, tc.message)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			s, err := pgstore.Open(ctx, "postgres://app:secret@"+addr+"/links?sslmode=disable")
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if got := errors.Is(err, pgstore.ErrRefused); got != tc.refused {
				t.Fatalf("Open: %v: matches ErrRefused = %v, want %v", err, got, tc.refused)
			}
			if tc.refused && (!strings.Contains(err.Error(), tc.message) || strings.Contains(err.Error(), "secret")) {
				t.Fatalf("Open: %v; want PostgreSQL's reason %q and no password", err, tc.message)
			}
		})
	}
}
