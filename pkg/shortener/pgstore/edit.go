package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

var _ shortener.Store = (*Store)(nil)

// Edit applies e to the link of code when owner is "" or its creator, in
// one conditional UPDATE: the row lock orders it with concurrent visits,
// and the limit is compared with the visits under that lock.
func (s *Store) Edit(ctx context.Context, code, owner string, e shortener.LinkEdit) (shortener.Link, error) {
	var (
		url  *string
		exp  any
		maxV any
	)
	url = e.URL
	if e.ExpiresAt != nil {
		exp = nullTime(*e.ExpiresAt)
	}
	if e.MaxVisits != nil {
		maxV = nullInt(*e.MaxVisits)
	}
	const q = `UPDATE shortener_links SET
			url = CASE WHEN $3 THEN $4 ELSE url END,
			expires_at = CASE WHEN $5 THEN $6::timestamptz ELSE expires_at END,
			max_visits = CASE WHEN $7 THEN $8::bigint ELSE max_visits END
		WHERE code = $1 AND ($2 = '' OR created_by = $2)
			AND (NOT $7 OR $8::bigint IS NULL OR visits <= $8::bigint)
		RETURNING ` + linkColumns
	l, err := scanLink(code, s.pool.QueryRow(ctx, q, code, owner,
		e.URL != nil, url, e.ExpiresAt != nil, exp, e.MaxVisits != nil, maxV))
	if err == nil {
		return l, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return shortener.Link{}, s.wrap("edit", err)
	}
	// No row updated: missing, someone else's, or over the limit.
	cur, err := s.Get(ctx, code)
	if err != nil {
		return shortener.Link{}, err
	}
	if owner != "" && cur.CreatedBy != owner {
		return shortener.Link{}, fmt.Errorf("shortener: pgstore: edit %q: %w", code, shortener.ErrNotFound)
	}
	return shortener.Link{}, fmt.Errorf("shortener: pgstore: edit %q: %w", code, shortener.ErrOverLimit)
}
