package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

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
//	memory:                        in memory, lost on exit
//
// It returns the kind and the path or DSN.
func parseStore(spec string) (storeKind, string, error) {
	switch {
	case spec == "":
		return kindBolt, boltstore.DefaultPath, nil
	case spec == "memory:" || spec == "memory":
		return kindMemory, "", nil
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		return kindPostgres, spec, nil
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

// openStore opens the store named by spec and returns it with a loggable
// description (passwords removed).
func openStore(ctx context.Context, spec string) (shortener.Store, string, error) {
	kind, arg, err := parseStore(spec)
	if err != nil {
		return nil, "", err
	}
	switch kind {
	case kindMemory:
		return memstore.New(), "memory (links are lost on exit)", nil
	case kindPostgres:
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		s, err := pgstore.Open(ctx, arg)
		if err != nil {
			return nil, "", err
		}
		return s, "postgres " + redact(arg), nil
	default:
		s, err := boltstore.Open(arg, boltstore.Options{})
		if err != nil {
			return nil, "", err
		}
		return s, "bolt " + arg, nil
	}
}

// redact hides the password of a URL-shaped DSN.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}
