package shortener

import (
	"crypto/rand"
)

// VisitBatch is what the Service writes of the visits it counted in
// memory over one flush interval, in one Store.WriteVisits call.
type VisitBatch struct {
	// ID names the batch: a failed write is written again with the same
	// ID and contents. Zero: no ID, the batch is always written.
	ID VisitBatchID
	// Counts are the visits of links without MaxVisits, by code (those
	// of limited links are counted by Store.Visit).
	Counts map[string]int64
	// Events are the visit statistics (Options.VisitStats), each
	// standing for VisitEvent.Visits() visits.
	Events []VisitEvent
}

// IsZero reports whether b has nothing to write.
func (b *VisitBatch) IsZero() bool { return len(b.Counts) == 0 && len(b.Events) == 0 }

// VisitBatchID names one VisitBatch. A store that can lose the
// acknowledgement of a write it committed (a connection to PostgreSQL
// dropped after COMMIT) records the ID in the same transaction and skips
// a batch whose ID it has recorded, so that a retried batch is counted
// once.
type VisitBatchID [16]byte

// IsZero reports whether id is no ID.
func (id VisitBatchID) IsZero() bool { return id == VisitBatchID{} }

// newVisitBatchID returns a random batch ID (unique across replicas and
// restarts).
func newVisitBatchID() VisitBatchID {
	var id VisitBatchID
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	return id
}
