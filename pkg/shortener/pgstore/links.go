package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// List returns up to limit links of owner, newest first, after the
// position after: one range scan of shortener_links_owner_idx.
func (s *Store) List(ctx context.Context, owner string, after shortener.Cursor, limit int) ([]shortener.Link, error) {
	var (
		rows pgx.Rows
		err  error
	)
	// created_by <> '' lets the planner use the partial index whatever
	// the parameter; COLLATE "C" orders codes by bytes, as the index does.
	const sel = `SELECT code, ` + linkColumns + ` FROM shortener_links WHERE created_by = $1 AND created_by <> ''`
	const order = ` ORDER BY created_at DESC, code COLLATE "C" DESC LIMIT `
	if after.IsZero() {
		rows, err = s.pool.Query(ctx, sel+order+`$2`, owner, limit)
	} else {
		rows, err = s.pool.Query(ctx, sel+` AND (created_at, code COLLATE "C") < ($2, $3)`+order+`$4`,
			owner, after.CreatedAt, after.Code, limit)
	}
	if err != nil {
		return nil, s.wrap("list", err)
	}
	defer rows.Close()
	links := make([]shortener.Link, 0, min(limit, 64))
	for rows.Next() {
		var code string
		l, err := scanLink("", rowWithCode{rows, &code})
		if err != nil {
			return nil, s.wrap("list", err)
		}
		l.Code = code
		links = append(links, l)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("list", err)
	}
	return links, nil
}

// rowWithCode scans a leading code column, then the columns scanLink asks
// for.
type rowWithCode struct {
	pgx.Row
	code *string
}

func (r rowWithCode) Scan(dest ...any) error {
	return r.Row.Scan(append([]any{r.code}, dest...)...)
}

// Delete removes the link of code when owner is "" or its creator.
func (s *Store) Delete(ctx context.Context, code, owner string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM shortener_links WHERE code = $1 AND ($2 = '' OR created_by = $2)`, code, owner)
	if err != nil {
		return s.wrap("delete", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("shortener: pgstore: delete %q: %w", code, shortener.ErrNotFound)
	}
	return nil
}

// Visit counts one visit with a conditional update: the row's lock makes
// concurrent visits from any number of replicas wait for each other, and
// each re-checks the limit, so exactly max_visits of them succeed.
func (s *Store) Visit(ctx context.Context, code string, now time.Time) (shortener.Link, error) {
	l, err := scanLink(code, s.pool.QueryRow(ctx, `UPDATE shortener_links SET visits = visits + 1
		WHERE code = $1 AND (expires_at IS NULL OR expires_at > $2) AND (max_visits IS NULL OR visits < max_visits)
		RETURNING `+linkColumns, code, now))
	if err == nil {
		return l, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return shortener.Link{}, s.wrap("visit", err)
	}
	// No row updated: missing, or gone.
	l, err = s.Get(ctx, code)
	if err != nil {
		return shortener.Link{}, err
	}
	return l, fmt.Errorf("shortener: pgstore: visit %q: %w", code, shortener.ErrGone)
}

// deadlockDetected is the SQLSTATE of a deadlock.
const deadlockDetected = "40P01"

// addCounts adds counts to the visits of the links in one statement,
// rows locked in code order (replicas flushing at the same time then wait
// for each other instead of deadlocking).
func addCounts(ctx context.Context, tx pgx.Tx, counts map[string]int64) error {
	if len(counts) == 0 {
		return nil
	}
	codes := make([]string, 0, len(counts))
	for c := range counts {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	ns := make([]int64, len(codes))
	for i, c := range codes {
		ns[i] = counts[c]
	}
	const q = `WITH v AS (SELECT * FROM unnest($1::text[], $2::bigint[]) AS v(code, n)),
		locked AS (SELECT l.code FROM shortener_links l JOIN v USING (code) ORDER BY l.code COLLATE "C" FOR UPDATE OF l)
		UPDATE shortener_links l SET visits = l.visits + v.n FROM v, locked
		WHERE l.code = v.code AND locked.code = l.code`
	_, err := tx.Exec(ctx, q, codes, ns)
	return err
}
