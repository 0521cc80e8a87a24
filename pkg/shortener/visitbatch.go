package shortener

import (
	"context"
	"crypto/rand"
)

// VisitBatchID names one batch of visit counts (Store.AddVisits) or visit
// events (VisitStatsStore.RecordVisits) that the Service writes, and
// writes again, with the same ID and contents, when the write failed. A
// store that can lose the acknowledgement of a write it committed (a
// connection to PostgreSQL dropped after COMMIT) records the ID in the
// same transaction and skips a batch whose ID it has recorded, so that a
// retried batch is counted once.
type VisitBatchID [16]byte

type visitBatchKey struct{}

// WithVisitBatch returns ctx carrying the ID of the batch a store call
// writes.
func WithVisitBatch(ctx context.Context, id VisitBatchID) context.Context {
	return context.WithValue(ctx, visitBatchKey{}, id)
}

// VisitBatchFrom returns the batch ID that ctx carries, if any: stores
// read it in AddVisits and RecordVisits.
func VisitBatchFrom(ctx context.Context) (VisitBatchID, bool) {
	id, ok := ctx.Value(visitBatchKey{}).(VisitBatchID)
	return id, ok
}

// newVisitBatchID returns a random batch ID (unique across replicas and
// restarts).
func newVisitBatchID() VisitBatchID {
	var id VisitBatchID
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	return id
}
