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

// visitShards is the number of independently locked parts of the
// in-memory visit counts: enough that concurrent redirects rarely wait for
// each other.
const visitShards = 64

// visitCounter counts the visits of links without MaxVisits in memory and
// writes them to the store in batches, at most one flush interval after
// they happened. No goroutine runs while nothing is pending: the first
// count after a flush arms a timer.
//
// Durability: counts not yet written are lost when the process dies, so a
// crash loses at most one interval of visits (plus a flush that was being
// written). A failed write is retried at the next interval under the same
// batch ID (see VisitBatchID); counts are dropped only when the store is
// closed.
type visitCounter struct {
	store    Store
	interval time.Duration
	log      *slog.Logger
	seed     maphash.Seed
	shards   [visitShards]visitShard
	armed    atomic.Bool

	mu     sync.Mutex // guards timer, closed, inflight and retry
	timer  *time.Timer
	closed bool
	// inflight holds the counts being written, so that pending still
	// sees them until the store has them.
	inflight map[string]int64
	// retry holds the counts of a failed write, written again under
	// retryID at the next flush.
	retry   map[string]int64
	retryID VisitBatchID

	flushMu sync.Mutex // one flush at a time
}

type visitShard struct {
	mu sync.Mutex
	m  map[string]int64
	_  [40]byte // keep shards on their own cache lines
}

func newVisitCounter(store Store, interval time.Duration, log *slog.Logger) *visitCounter {
	return &visitCounter{store: store, interval: interval, log: log, seed: maphash.MakeSeed()}
}

func (c *visitCounter) shard(code string) *visitShard {
	return &c.shards[maphash.String(c.seed, code)%visitShards]
}

// add counts one visit of code.
func (c *visitCounter) add(code string) {
	sh := c.shard(code)
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = make(map[string]int64)
	}
	sh.m[code]++
	sh.mu.Unlock()
	if !c.armed.Load() {
		c.arm()
	}
}

// arm schedules a flush one interval from now unless one is scheduled.
func (c *visitCounter) arm() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.armed.Load() {
		return
	}
	c.armed.Store(true)
	c.timer = time.AfterFunc(c.interval, c.onTimer)
}

func (c *visitCounter) onTimer() {
	// Disarm before taking the counts: a visit counted from now on arms
	// the next flush, one counted before is in this one.
	c.armed.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), max(c.interval, 5*time.Second))
	defer cancel()
	_ = c.flush(ctx)
}

// take removes and returns every pending count.
func (c *visitCounter) take() map[string]int64 {
	var out map[string]int64
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		m := sh.m
		sh.m = nil
		sh.mu.Unlock()
		if len(m) == 0 {
			continue
		}
		if out == nil {
			out = m
			continue
		}
		for k, v := range m {
			out[k] += v
		}
	}
	return out
}

// flush writes the pending counts to the store. While they are being
// written they stay visible to pending (as inflight). A failed write is
// kept as it is, with its batch ID, and written again alone at the next
// flush before anything newer (a store that committed it but lost the
// acknowledgement then recognises it and does not count it twice).
func (c *visitCounter) flush(ctx context.Context) error {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	for {
		c.mu.Lock()
		batch, id, again := c.retry, c.retryID, c.retry != nil
		if !again {
			batch, id = c.take(), newVisitBatchID()
		}
		c.retry = nil
		c.inflight = batch
		c.mu.Unlock()
		if len(batch) == 0 {
			c.mu.Lock()
			c.inflight = nil
			c.mu.Unlock()
			return nil
		}
		err := c.store.AddVisits(WithVisitBatch(ctx, id), batch)
		c.mu.Lock()
		retry := err != nil && !c.closed && !errors.Is(err, ErrClosed)
		if retry {
			c.retry, c.retryID = batch, id
		}
		c.inflight = nil
		c.mu.Unlock()
		switch {
		case err == nil && again:
			continue // then the counts taken since
		case err == nil:
			return nil
		case retry:
			c.log.ErrorContext(ctx, "shortener: write visit counts; retrying at the next flush", "links", len(batch), "err", err)
			c.arm()
		default:
			c.log.WarnContext(ctx, "shortener: visit counts dropped", "links", len(batch), "err", err)
		}
		return err
	}
}

// pending returns the visits of code counted here and not yet in the
// store.
func (c *visitCounter) pending(code string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	sh := c.shard(code)
	sh.mu.Lock()
	n := sh.m[code]
	sh.mu.Unlock()
	return n + c.inflight[code] + c.retry[code]
}

// drop forgets the pending visits of code (its link was deleted).
func (c *visitCounter) drop(code string) {
	sh := c.shard(code)
	sh.mu.Lock()
	delete(sh.m, code)
	sh.mu.Unlock()
	c.mu.Lock()
	delete(c.retry, code)
	c.mu.Unlock()
}

// close stops the timer and writes what is pending.
func (c *visitCounter) close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Unlock()
	return c.flush(ctx)
}
