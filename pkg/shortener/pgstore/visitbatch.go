package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// markBatch records the batch ID in tx and reports whether the batch is new: false when a transaction
// with the same ID committed before (a retry whose first attempt committed
// but lost its acknowledgement), and the batch must not be applied again.
// A concurrent attempt of the same batch waits on the primary key until
// the first commits or rolls back. Without an ID every batch is new.
func markBatch(ctx context.Context, tx pgx.Tx, id shortener.VisitBatchID) (bool, error) {
	if id.IsZero() {
		return true, nil
	}
	tag, err := tx.Exec(ctx, `INSERT INTO shortener_visit_batches (id) VALUES ($1) ON CONFLICT (id) DO NOTHING`, [16]byte(id))
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// batchKept is how long batch IDs are kept: a retry comes at the next
// flush, seconds later, or when the database answers again after an
// outage (every retry of a batch is of a batch not yet acknowledged).
const batchKept = 24 * time.Hour

// pruneBatchEvery spaces the deletions of old batch IDs.
const pruneBatchEvery = time.Minute

// pruneBatches deletes batch IDs older than batchKept, at most once per
// pruneBatchEvery (one index range scan); failures are left for the next
// time.
func (s *Store) pruneBatches(ctx context.Context) {
	now := time.Now().UnixNano()
	last := s.batchPruned.Load()
	if now-last < int64(pruneBatchEvery) || !s.batchPruned.CompareAndSwap(last, now) {
		return
	}
	_, _ = s.pool.Exec(ctx, `DELETE FROM shortener_visit_batches WHERE written_at < now() - $1::interval`, batchKept)
}
