package shortener

import (
	"context"
	"errors"
	"hash/maphash"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/shortener/visitinfo"
)

// visitLogShards is the number of independently locked parts of the visit
// log, chosen by the link's code: concurrent redirects of different links
// rarely wait for each other.
const visitLogShards = 64

// maxPendingVisits bounds the aggregates the visit log holds in memory
// (while the store is down, for example): beyond it the visits that would
// need a new one are dropped and counted.
const maxPendingVisits = 1 << 20

// visitKey is one aggregate of the visit log: the visits of one link in
// one second with the same dimensions. A redirect classifies its
// User-Agent and Referer from the caches of values seen before (no lock,
// no parsing); a value they do not know yet stays raw here (ua, or ref
// with refRaw) and the flusher classifies it, once per distinct value,
// and drops it. The client's address never gets here, only its country.
type visitKey struct {
	code       string
	at         int64 // Unix seconds
	agent      visitinfo.Agent
	ua         string // raw User-Agent when !agentKnown
	ref        string // referrer host, or the raw Referer when refRaw
	country    string
	agentKnown bool
	refRaw     bool
}

type visitLogShard struct {
	mu sync.Mutex
	m  map[visitKey]int64
	// spare is the map of the previous flush, emptied, for the next one:
	// in a steady state the log allocates nothing per visit.
	spare map[visitKey]int64
	_     [40]byte // keep shards on their own cache lines
}

// visitBatch is a batch of aggregates written, or to be written again,
// under one ID (see VisitBatchID).
type visitBatch struct {
	id     VisitBatchID
	events []VisitEvent
}

// visitLog aggregates the visits of every redirect in memory, by link,
// second and dimensions, and writes the aggregates to a VisitStatsStore
// once per flush interval, from one goroutine. A crash loses at most one
// interval of visits; a failed write is retried at the next interval
// with the same batch ID (so that a store that committed it but lost
// the acknowledgement does not count it twice), within maxPendingVisits.
type visitLog struct {
	store     VisitStatsStore
	interval  time.Duration
	retention time.Duration
	log       *slog.Logger
	now       func() time.Time
	parser    *visitinfo.Parser
	seed      maphash.Seed
	shards    [visitLogShards]visitLogShard
	pending   atomic.Int64 // aggregates in the shards
	dropped   atomic.Int64
	hosts     sync.Map // Referer value → its host
	nhosts    atomic.Int64

	flushMu sync.Mutex // one flush at a time; guards the fields below
	// retry is a batch whose write failed: written again, alone and
	// unchanged, before anything else.
	retry *visitBatch
	// waiting holds the aggregates taken while retry was pending (never
	// written yet, so free to grow).
	waiting    []VisitEvent
	buf        []VisitEvent // the last batch's slice, reused
	lastPrune  time.Time
	stop, done chan struct{}
	closeOnce  sync.Once
}

func newVisitLog(store VisitStatsStore, interval, retention time.Duration, now func() time.Time, log *slog.Logger) *visitLog {
	l := &visitLog{
		store: store, interval: interval, retention: retention, log: log, now: now,
		parser: visitinfo.NewParser(), seed: maphash.MakeSeed(),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go l.run()
	return l
}

// add counts one visit: one map increment under the lock of the link's
// shard. It allocates only for a combination not yet seen since the last
// flush (the map's entry).
func (l *visitLog) add(code, ua, ref, country string, at int64) {
	k := visitKey{code: code, at: at, country: country}
	if a, ok := l.parser.Cached(ua); ok {
		k.agent, k.agentKnown = a, true
	} else {
		k.ua = ua
	}
	if ref != "" {
		if h, ok := l.hosts.Load(ref); ok {
			k.ref = h.(string)
		} else {
			k.ref, k.refRaw = ref, true
		}
	}
	sh := &l.shards[maphash.String(l.seed, code)%visitLogShards]
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = make(map[visitKey]int64)
	}
	n := len(sh.m)
	sh.m[k]++
	if len(sh.m) > n && l.pending.Add(1) > maxPendingVisits {
		delete(sh.m, k)
		sh.mu.Unlock()
		l.pending.Add(-1)
		l.dropped.Add(1)
		return
	}
	sh.mu.Unlock()
}

func (l *visitLog) run() {
	defer close(l.done)
	t := time.NewTicker(l.interval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), max(l.interval, 10*time.Second))
			_ = l.flush(ctx)
			cancel()
		}
	}
}

// keptMap is the largest shard map kept for the next flush: a burst's
// larger map is left to the garbage collector.
const keptMap = 4096

// take appends the aggregates of every shard to out, as events, and
// empties the shards. l.flushMu is held.
func (l *visitLog) take(out []VisitEvent) []VisitEvent {
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		m := sh.m
		sh.m, sh.spare = sh.spare, nil
		sh.mu.Unlock()
		if len(m) == 0 {
			continue
		}
		l.pending.Add(-int64(len(m)))
		for k, n := range m {
			out = append(out, l.event(&k, n))
		}
		if len(m) > keptMap {
			continue
		}
		clear(m)
		sh.mu.Lock()
		sh.spare = m
		sh.mu.Unlock()
	}
	return out
}

// event classifies an aggregate: what the store keeps of it.
func (l *visitLog) event(k *visitKey, n int64) VisitEvent {
	a := k.agent
	if !k.agentKnown {
		a = l.parser.Parse(k.ua)
	}
	host := k.ref
	if k.refRaw {
		host = l.referrerHost(k.ref)
	}
	return VisitEvent{
		Code: k.code, At: time.Unix(k.at, 0).UTC(), ReferrerHost: host,
		Device: a.Device, Browser: a.Browser, Country: k.country, Bot: a.Bot, Count: n,
	}
}

// flush writes the aggregates taken since the last flush, after a batch
// that failed before (alone, unchanged, under its ID); once an hour it
// also drops raw visits past the retention.
func (l *visitLog) flush(ctx context.Context) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	fresh := l.waiting
	if fresh == nil {
		fresh = l.buf[:0]
	}
	fresh = l.take(fresh)
	l.waiting = nil
	if n := l.dropped.Swap(0); n > 0 {
		l.log.WarnContext(ctx, "shortener: visits dropped: too many waiting for the store", "visits", n)
	}
	var err error
	if l.retry != nil {
		if err = l.write(ctx, l.retry); err == nil || errors.Is(err, ErrClosed) {
			l.retry = nil
		} else {
			if len(fresh) > maxPendingVisits {
				fresh = fresh[len(fresh)-maxPendingVisits:]
			}
			l.waiting = fresh
			return err
		}
	}
	if len(fresh) > 0 {
		b := &visitBatch{id: newVisitBatchID(), events: fresh}
		switch err = l.write(ctx, b); {
		case err == nil:
			clear(fresh) // no strings kept alive until the next flush
			l.buf = fresh[:0]
		case !errors.Is(err, ErrClosed):
			l.retry, l.buf = b, nil
		}
	}
	if now := l.now(); err == nil && now.Sub(l.lastPrune) >= time.Hour {
		l.lastPrune = now
		if perr := l.store.PruneVisits(ctx, now.Add(-l.retention)); perr != nil {
			l.log.ErrorContext(ctx, "shortener: drop visits past retention", "err", perr)
		}
	}
	return err
}

// write stores b under its ID.
func (l *visitLog) write(ctx context.Context, b *visitBatch) error {
	err := l.store.RecordVisits(WithVisitBatch(ctx, b.id), b.events)
	switch {
	case err == nil:
	case errors.Is(err, ErrClosed):
		l.log.WarnContext(ctx, "shortener: visit statistics dropped: store closed", "aggregates", len(b.events), "err", err)
	default:
		l.log.ErrorContext(ctx, "shortener: write visit statistics; retrying at the next flush", "aggregates", len(b.events), "err", err)
	}
	return err
}

// maxHosts bounds the referrer cache.
const maxHosts = 10_000

// referrerHost is visitinfo.ReferrerHost, remembered (most visits come
// from a few referring pages), so that redirects find it without
// parsing. l.flushMu is held.
func (l *visitLog) referrerHost(ref string) string {
	if h, ok := l.hosts.Load(ref); ok {
		return h.(string)
	}
	h := strings.Clone(visitinfo.ReferrerHost(ref))
	if len(ref) <= 2048 {
		if l.nhosts.Add(1) > maxHosts {
			l.hosts.Clear() // crude, bounded: the popular values come back at once
			l.nhosts.Store(1)
		}
		l.hosts.Store(strings.Clone(ref), h)
	}
	return h
}

// close stops the flusher and writes what is pending.
func (l *visitLog) close(ctx context.Context) error {
	var err error
	l.closeOnce.Do(func() {
		close(l.stop)
		<-l.done
		err = l.flush(ctx)
	})
	return err
}
