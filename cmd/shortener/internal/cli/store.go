package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/boltstore"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/memstore"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/pgstore"
)

// storeKind names the backends selected by --store.
type storeKind int

const (
	kindBolt storeKind = iota
	kindPostgres
	kindMemory
)

// parseStore reads the --store value:
//
//	bolt:PATH                      bbolt file at PATH (bolt://PATH works too)
//	PATH                           same (no scheme)
//	postgres://... postgresql://... PostgreSQL, the value is the pgx DSN
//	host=... user=... dbname=...   PostgreSQL, libpq's keyword/value form
//	memory:                        in memory, lost on exit
//
// It returns the kind and the path or DSN. A value that looks like a
// PostgreSQL DSN (a postgres or postgresql prefix followed by ':' or '/',
// or keyword/value pairs led by a libpq keyword) is PostgreSQL, and an
// error naming what does not parse when it does not: never a bbolt file
// named like a DSN.
func parseStore(spec string) (storeKind, string, error) {
	switch {
	case spec == "":
		return kindBolt, boltstore.DefaultPath, nil
	case spec == "memory:" || spec == "memory":
		return kindMemory, "", nil
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		if err := checkDSN(spec); err != nil {
			return 0, "", err
		}
		return kindPostgres, spec, nil
	case looksLikeKeywordDSN(spec):
		if err := checkDSN(spec); err != nil {
			return 0, "", err
		}
		return kindPostgres, spec, nil
	case looksLikePostgresURL(spec):
		return 0, "", fmt.Errorf("shortener: --store %q looks like a PostgreSQL DSN but is not one: write postgres://user:password@host:5432/dbname (or host=... user=... dbname=...)", redact(spec))
	case strings.HasPrefix(spec, "bolt:"):
		p := strings.TrimPrefix(strings.TrimPrefix(spec, "bolt:"), "//")
		if p == "" {
			return 0, "", errors.New("shortener: --store bolt: needs a file path, e.g. bolt:./data/shortener.db")
		}
		return kindBolt, p, nil
	case strings.Contains(spec, "://") || strings.HasSuffix(spec, ":") && !strings.ContainsAny(spec, `/\`):
		return 0, "", fmt.Errorf("shortener: --store %q: unknown scheme (use bolt:PATH, postgres://..., or memory:)", redact(spec))
	default:
		return kindBolt, spec, nil
	}
}

// checkDSN parses a PostgreSQL DSN as pgstore.Open will, and says what is
// wrong with it (the parameter, never the password).
func checkDSN(dsn string) error {
	if _, err := pgxpool.ParseConfig(dsn); err != nil {
		return fmt.Errorf("shortener: --store: invalid PostgreSQL DSN: %s (format: postgres://user:password@host:5432/dbname?pool_max_conns=8, or host=... user=... dbname=...)", pgstore.DSNProblem(err))
	}
	return nil
}

// looksLikePostgresURL reports whether spec starts like a PostgreSQL URL
// written wrong: postgres or postgresql (any case) followed by ':' or
// '/' (postgres:/h/db, postgres//h/db, postgresql:h).
func looksLikePostgresURL(spec string) bool {
	for _, scheme := range []string{"postgresql", "postgres"} {
		if len(spec) > len(scheme) && strings.EqualFold(spec[:len(scheme)], scheme) {
			c := spec[len(scheme)]
			return c == ':' || c == '/'
		}
	}
	return false
}

// libpqKeywords are the connection keywords of libpq's keyword/value
// form that lead a DSN (a bbolt path rarely starts with one of these and
// '=').
var libpqKeywords = []string{
	"host", "hostaddr", "port", "dbname", "user", "password", "passfile",
	"sslmode", "sslrootcert", "sslcert", "sslkey", "connect_timeout",
	"application_name", "options", "service", "target_session_attrs",
}

// looksLikeKeywordDSN reports whether spec is in libpq's keyword/value
// form: it starts with a libpq keyword followed by '=' (spaces allowed
// around it).
func looksLikeKeywordDSN(spec string) bool {
	s := strings.TrimLeft(spec, " \t")
	i := strings.IndexByte(s, '=')
	if i <= 0 {
		return false
	}
	key := strings.TrimRight(s[:i], " \t")
	return slices.Contains(libpqKeywords, strings.ToLower(key))
}

// openStore opens the store named by spec and returns it with a loggable
// description (passwords removed).
//
// A PostgreSQL that does not answer at start does not stop the start: the
// store connects in the background (see lazyStore), and until then every
// route that needs it answers 503. A DSN that does not parse does, and so
// does a PostgreSQL that answers with a refusal no retry fixes (see
// pgstore.ErrRefused), with PostgreSQL's reason.
func openStore(ctx context.Context, spec string, log *slog.Logger) (shortener.Store, string, error) {
	kind, arg, err := parseStore(spec)
	if err != nil {
		return nil, "", err
	}
	switch kind {
	case kindMemory:
		return memstore.New(), "memory (links are lost on exit)", nil
	case kindPostgres:
		desc := "postgres " + redact(arg)
		octx, cancel := context.WithTimeout(ctx, pgFirstConnectTimeout)
		s, err := pgstore.Open(octx, arg)
		cancel()
		switch {
		case errors.Is(err, pgstore.ErrInvalidDSN):
			return nil, "", err
		case errors.Is(err, pgstore.ErrRefused):
			// PostgreSQL answered and said no (no such database or role,
			// a wrong password, ...): retrying would only repeat it.
			return nil, "", fmt.Errorf("shortener: --store %s: %w", redact(arg), err)
		case err != nil:
			log.Warn("PostgreSQL does not answer; starting without it: links answer 503 until it does", "err", err)
			return newLazyStore(func(ctx context.Context) (shortener.Store, error) {
				ctx, cancel := context.WithTimeout(ctx, 2*pgFirstConnectTimeout)
				defer cancel()
				return pgstore.Open(ctx, arg)
			}, pgReconnectInterval, log), desc + " (not connected yet)", nil
		}
		return s, desc, nil
	default:
		s, err := boltstore.Open(arg, boltstore.Options{})
		if err != nil {
			return nil, "", err
		}
		return s, "bolt " + arg, nil
	}
}

// PostgreSQL at start: how long the first connection may take before the
// shortener starts without it, and how often it tries again.
const (
	pgFirstConnectTimeout = 5 * time.Second
	pgReconnectInterval   = 2 * time.Second
)

// redact hides the password of a DSN (URL or keyword/value form).
func redact(dsn string) string {
	if looksLikeKeywordDSN(dsn) {
		return keywordPassword.ReplaceAllString(dsn, "${1}xxxxx")
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}

// keywordPassword matches the value of password= in a keyword/value DSN
// (quoted or not).
var keywordPassword = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)`)
