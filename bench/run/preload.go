package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/boltstore"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/pgstore"
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// code returns the i-th preloaded code: 7 base62 characters, distinct for
// every i < 62^7 (i times an odd multiplier coprime to 31, modulo 62^7), and
// spread over the whole key space like random codes.
func code(i int) string {
	const space = 3521614606208 // 62^7
	v := (uint64(i)*2654435761 + 123456789) % space
	var c [7]byte
	for j := range c {
		c[6-j] = base62[v%62]
		v /= 62
	}
	return string(c[:])
}

func linkURL(i int) string {
	return fmt.Sprintf("https://example.com/articles/%d?utm_source=bench", i)
}

// hotCodes returns n codes spread over the first total preloaded links,
// none of them a reserved word, for the redirect load.
func hotCodes(total, n int) []string {
	out := make([]string, 0, n)
	for k := 0; len(out) < n; k++ {
		c := code((k * (total / n)) % total)
		reserved := false
		for _, w := range shortener.DefaultReserved {
			if strings.EqualFold(w, c) {
				reserved = true
			}
		}
		if !reserved {
			out = append(out, c)
		}
	}
	return out
}

const chunk = 100_000

func chunkLinks(from, to int, now time.Time) []shortener.Link {
	links := make([]shortener.Link, 0, to-from)
	for i := from; i < to; i++ {
		links = append(links, shortener.Link{Code: code(i), URL: linkURL(i), CreatedAt: now})
	}
	return links
}

// preloadBolt writes n links into a new bbolt file at path.
func preloadBolt(ctx context.Context, path string, n int) error {
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		return err
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	for from := 0; from < n; from += chunk {
		if err := s.Import(ctx, chunkLinks(from, min(n, from+chunk), now)); err != nil {
			s.Close()
			return err
		}
	}
	return s.Close()
}

// preloadPG (re)creates schema in the database of dsn, migrates it with
// pgstore and loads n links with COPY. It returns dsn with search_path set
// to the schema.
func preloadPG(ctx context.Context, dsn, schema string, n int) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("postgres DSN: %w", err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	ident := pgx.Identifier{schema}.Sanitize()
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+ident+" CASCADE"); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+ident); err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	sdsn := u.String()
	st, err := pgstore.Open(ctx, sdsn)
	if err != nil {
		return "", err
	}
	st.Close()
	if _, err := conn.Exec(ctx, "SET search_path TO "+ident); err != nil {
		return "", err
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	i := 0
	_, err = conn.CopyFrom(ctx, pgx.Identifier{"shortener_links"}, []string{"code", "url", "created_by", "created_at"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i >= n {
				return nil, nil
			}
			row := []any{code(i), linkURL(i), "", now}
			i++
			return row, nil
		}))
	if err != nil {
		return "", fmt.Errorf("copy: %w", err)
	}
	if _, err := conn.Exec(ctx, "VACUUM ANALYZE shortener_links"); err != nil {
		return "", err
	}
	return sdsn, nil
}

// dropSchema removes a schema made by preloadPG.
func dropSchema(ctx context.Context, dsn, schema string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	return err
}
