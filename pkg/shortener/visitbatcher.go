package shortener

import (
	"context"
	"errors"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// visitShards is the number of independently locked parts of the visits
// held in memory, chosen by the link's code: concurrent redirects of
// different links rarely wait for each other.
const visitShards = 64

// maxPendingVisits bounds the statistics aggregates held in memory (while
// the store is down, for example): beyond it the visits that would need a
// new one are dropped from the statistics (still counted) and logged.
const maxPendingVisits = 1 << 20

type visitShard struct {
	mu sync.Mutex
	// counts are the visits of links without MaxVisits, by code.
	counts map[string]int64
	// aggs are the statistics: visits by link, second and dimensions.
	aggs map[visitKey]int64
	// spare is the aggs map of the previous flush, emptied, for the next
	// one: in a steady state a visit allocates nothing.
	spare map[visitKey]int64
	_     [32]byte // keep shards on their own cache lines
}

// visitBatcher holds the visits of every redirect in memory, the count of
// each unlimited link and (with Options.VisitStats) the statistics
// aggregated by link, second and dimensions, and writes both to the store
// in one Store.WriteVisits call, at most one flush interval after they
// happened. No goroutine runs while nothing is pending: the first visit
// after a flush arms a timer.
//
// Durability: visits not yet written are lost when the process dies, so a
// crash loses at most one interval (plus a flush that was being written).
// A failed write is written again, alone and unchanged under its batch ID,
// at the next flush before anything newer (a store that committed it but
// lost the acknowledgement recognises it and does not count it twice);
// it is dropped only when the store is closed.
type visitBatcher struct {
	store     Store
	interval  time.Duration
	log       *slog.Logger
	now       func() time.Time
	seed      maphash.Seed
	shards    [visitShards]visitShard
	stats     *visitClassifier // nil: Options.VisitStats off
	retention time.Duration
	armed     atomic.Bool
	aggs      atomic.Int64 // aggregates in the shards
	dropped   atomic.Int64

	mu     sync.Mutex // guards timer, closed, inflight and retry
	timer  *time.Timer
	closed bool
	// inflight holds the counts being written, so that pending still
	// sees them until the store has them.
	inflight map[string]int64
	// retry is a batch whose write failed.
	retry *VisitBatch

	flushMu   sync.Mutex // one flush at a time; guards the fields below
	buf       []VisitEvent
	lastPrune time.Time
}

// newVisitBatcher returns a batcher writing to store every interval; with
// stats, it keeps statistics too, and drops raw ones past retention.
func newVisitBatcher(store Store, interval time.Duration, stats bool, retention time.Duration, now func() time.Time, log *slog.Logger) *visitBatcher {
	b := &visitBatcher{store: store, interval: interval, log: log, now: now, seed: maphash.MakeSeed(), retention: retention}
	if stats {
		b.stats = newVisitClassifier()
	}
	return b
}

// add records one visit of the link of code at the Unix second at: its
// count when count (an unlimited link), and with statistics on, what v
// says of the visitor. One map increment or two under the lock of the
// link's shard; it allocates only for a link, or a combination of
// dimensions, not yet seen since the last flush.
func (b *visitBatcher) add(code string, count bool, v *Visitor, at int64) {
	sh := &b.shards[maphash.String(b.seed, code)%visitShards]
	if b.stats == nil {
		if !count {
			return
		}
		sh.mu.Lock()
		sh.count(code)
		sh.mu.Unlock()
	} else {
		k := b.stats.key(code, v, at) // from the caches, before the lock
		sh.mu.Lock()
		if count {
			sh.count(code)
		}
		if sh.aggs == nil {
			sh.aggs = make(map[visitKey]int64)
		}
		n := len(sh.aggs)
		sh.aggs[k]++
		if len(sh.aggs) > n && b.aggs.Add(1) > maxPendingVisits {
			delete(sh.aggs, k)
			b.aggs.Add(-1)
			b.dropped.Add(1)
		}
		sh.mu.Unlock()
	}
	if !b.armed.Load() {
		b.arm()
	}
}

// count adds a visit of code. sh.mu is held.
func (sh *visitShard) count(code string) {
	if sh.counts == nil {
		sh.counts = make(map[string]int64)
	}
	sh.counts[code]++
}

// arm schedules a flush one interval from now unless one is scheduled.
func (b *visitBatcher) arm() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.armed.Load() {
		return
	}
	b.armed.Store(true)
	b.timer = time.AfterFunc(b.interval, b.onTimer)
}

func (b *visitBatcher) onTimer() {
	// Disarm before taking the visits: a visit recorded from now on arms
	// the next flush, one recorded before is in this one.
	b.armed.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), max(b.interval, 10*time.Second))
	defer cancel()
	if b.flush(ctx) == nil {
		b.prune(ctx)
	}
}

// take empties the shards: it returns their counts, merged, and their
// statistics maps (to be turned into events). b.mu is held.
func (b *visitBatcher) take(aggs []map[visitKey]int64) (map[string]int64, []map[visitKey]int64) {
	var counts map[string]int64
	for i := range b.shards {
		sh := &b.shards[i]
		sh.mu.Lock()
		c, a := sh.counts, sh.aggs
		sh.counts = nil
		if len(a) > 0 {
			sh.aggs, sh.spare = sh.spare, nil
		}
		sh.mu.Unlock()
		if len(a) > 0 {
			b.aggs.Add(-int64(len(a)))
			aggs = append(aggs, a)
		}
		switch {
		case len(c) == 0:
		case counts == nil:
			counts = c
		default:
			for k, v := range c {
				counts[k] += v
			}
		}
	}
	return counts, aggs
}

// keptMap is the largest statistics map kept for the next flush: a
// burst's larger map is left to the garbage collector.
const keptMap = 4096

// events appends the aggregates of aggs to out, as events, and gives the
// emptied maps back to their shards. b.flushMu is held.
func (b *visitBatcher) events(out []VisitEvent, aggs []map[visitKey]int64) []VisitEvent {
	for _, m := range aggs {
		var code string
		for k, n := range m {
			out = append(out, b.stats.event(&k, n))
			code = k.code
		}
		if len(m) > keptMap {
			continue
		}
		clear(m)
		sh := &b.shards[maphash.String(b.seed, code)%visitShards]
		sh.mu.Lock()
		sh.spare = m
		sh.mu.Unlock()
	}
	return out
}

// flush writes the visits held in memory to the store, after a batch
// that failed before (alone, unchanged, under its ID). While counts are
// being written they stay visible to pending (as inflight).
func (b *visitBatcher) flush(ctx context.Context) error {
	b.flushMu.Lock()
	defer b.flushMu.Unlock()
	if n := b.dropped.Swap(0); n > 0 {
		b.log.WarnContext(ctx, "shortener: visits dropped from the statistics: too many waiting for the store", "visits", n)
	}
	for {
		var aggs []map[visitKey]int64
		b.mu.Lock()
		batch, again := b.retry, b.retry != nil
		b.retry = nil
		if !again {
			batch = &VisitBatch{}
			batch.Counts, aggs = b.take(nil)
		}
		b.inflight = batch.Counts
		b.mu.Unlock()
		if !again && len(aggs) > 0 {
			batch.Events = b.events(b.buf[:0], aggs)
		}
		if batch.IsZero() {
			b.mu.Lock()
			b.inflight = nil
			b.mu.Unlock()
			return nil
		}
		if !again {
			batch.ID = newVisitBatchID()
		}
		err := b.store.WriteVisits(ctx, *batch)
		b.mu.Lock()
		retry := err != nil && !b.closed && !errors.Is(err, ErrClosed)
		if retry {
			b.retry = batch
		}
		b.inflight = nil
		b.mu.Unlock()
		switch {
		case retry:
			b.buf = nil // the retry keeps its events
			b.log.ErrorContext(ctx, "shortener: write visits; retrying at the next flush", "links", len(batch.Counts), "aggregates", len(batch.Events), "err", err)
			b.arm()
			return err
		case err != nil:
			b.log.WarnContext(ctx, "shortener: visits dropped", "links", len(batch.Counts), "aggregates", len(batch.Events), "err", err)
			return err
		}
		clear(batch.Events) // no strings kept alive until the next flush
		b.buf = batch.Events[:0]
		if !again {
			return nil
		}
		// then the visits recorded since
	}
}

// prune drops the raw statistics past the retention, at most once an
// hour, after a periodic flush (never in a request's: Service.Edit
// flushes, and a first prune may have much to drop).
func (b *visitBatcher) prune(ctx context.Context) {
	if b.stats == nil {
		return
	}
	b.flushMu.Lock()
	defer b.flushMu.Unlock()
	now := b.now()
	if now.Sub(b.lastPrune) < time.Hour {
		return
	}
	b.lastPrune = now
	if err := b.store.PruneVisits(ctx, now.Add(-b.retention)); err != nil {
		b.log.ErrorContext(ctx, "shortener: drop visits past retention", "err", err)
	}
}

// pending returns the visits of code counted here and not yet in the
// store.
func (b *visitBatcher) pending(code string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	sh := &b.shards[maphash.String(b.seed, code)%visitShards]
	sh.mu.Lock()
	n := sh.counts[code]
	sh.mu.Unlock()
	n += b.inflight[code]
	if b.retry != nil {
		n += b.retry.Counts[code]
	}
	return n
}

// drop forgets the pending visit count of code (its link was deleted).
func (b *visitBatcher) drop(code string) {
	sh := &b.shards[maphash.String(b.seed, code)%visitShards]
	sh.mu.Lock()
	delete(sh.counts, code)
	sh.mu.Unlock()
	b.mu.Lock()
	if b.retry != nil {
		delete(b.retry.Counts, code)
	}
	b.mu.Unlock()
}

// close stops the timer and writes what is pending.
func (b *visitBatcher) close(ctx context.Context) error {
	b.mu.Lock()
	b.closed = true
	if b.timer != nil {
		b.timer.Stop()
	}
	b.mu.Unlock()
	return b.flush(ctx)
}
