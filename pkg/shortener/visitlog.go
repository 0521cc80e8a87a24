package shortener

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/shortener/visitinfo"
)

// visitLogShards is the number of independently locked queues of the
// visit log.
const visitLogShards = 16

// maxPendingVisits bounds the events the visit log holds in memory (while
// the store is down, for example): beyond it new events are dropped and
// counted.
const maxPendingVisits = 1 << 20

// rawVisit is what a redirect hands to the visit log: a small struct, so
// that the redirect costs an append. The User-Agent and Referer are
// parsed by the flusher, which keeps only what VisitEvent holds; the
// client's address never gets here (only the country looked up from it).
type rawVisit struct {
	code    string
	at      int64 // Unix seconds
	ua, ref string
	country string
}

type visitLogShard struct {
	mu     sync.Mutex
	events []rawVisit
	_      [32]byte
}

// visitLog queues the visits of every redirect and writes them to a
// VisitStatsStore in batches, once per flush interval, from one
// goroutine. A crash loses at most one interval of events; a failed write
// is retried at the next interval, within maxPendingVisits.
type visitLog struct {
	store     VisitStatsStore
	interval  time.Duration
	retention time.Duration
	log       *slog.Logger
	now       func() time.Time
	parser    *visitinfo.Parser
	shards    [visitLogShards]visitLogShard
	pending   atomic.Int64
	dropped   atomic.Int64

	flushMu    sync.Mutex // one flush at a time; guards retry, lastPrune and hosts
	retry      []VisitEvent
	hosts      map[string]string // Referer value → its host, for the flusher
	lastPrune  time.Time
	stop, done chan struct{}
	closeOnce  sync.Once
}

func newVisitLog(store VisitStatsStore, interval, retention time.Duration, now func() time.Time, log *slog.Logger) *visitLog {
	l := &visitLog{
		store: store, interval: interval, retention: retention, log: log, now: now,
		parser: visitinfo.NewParser(),
		hosts:  map[string]string{},
		stop:   make(chan struct{}), done: make(chan struct{}),
	}
	go l.run()
	return l
}

// add queues one visit.
func (l *visitLog) add(code, ua, ref, country string, at int64) {
	if l.pending.Add(1) > maxPendingVisits {
		l.pending.Add(-1)
		l.dropped.Add(1)
		return
	}
	sh := &l.shards[rand.Uint32()%visitLogShards]
	sh.mu.Lock()
	sh.events = append(sh.events, rawVisit{code: code, at: at, ua: ua, ref: ref, country: country})
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

// take removes every queued event.
func (l *visitLog) take() []rawVisit {
	var out []rawVisit
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		ev := sh.events
		sh.events = nil
		sh.mu.Unlock()
		if out == nil {
			out = ev
		} else {
			out = append(out, ev...)
		}
	}
	l.pending.Add(-int64(len(out)))
	return out
}

// flush parses the queued events and writes them, with those of a failed
// flush; once an hour it also drops raw visits past the retention.
func (l *visitLog) flush(ctx context.Context) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	raw := l.take()
	batch := l.retry
	l.retry = nil
	for _, r := range raw {
		a := l.parser.Parse(r.ua)
		batch = append(batch, VisitEvent{
			Code: r.code, At: time.Unix(r.at, 0).UTC(), ReferrerHost: l.referrerHost(r.ref),
			Device: a.Device, Browser: a.Browser, Country: r.country, Bot: a.Bot,
		})
	}
	if n := l.dropped.Swap(0); n > 0 {
		l.log.WarnContext(ctx, "shortener: visit events dropped: too many waiting for the store", "events", n)
	}
	var err error
	if len(batch) > 0 {
		if err = l.store.RecordVisits(ctx, batch); err != nil {
			if errors.Is(err, ErrClosed) {
				l.log.WarnContext(ctx, "shortener: visit events dropped: store closed", "events", len(batch), "err", err)
			} else {
				l.log.ErrorContext(ctx, "shortener: write visit events; retrying at the next flush", "events", len(batch), "err", err)
				if len(batch) > maxPendingVisits {
					batch = batch[len(batch)-maxPendingVisits:]
				}
				l.retry = batch
			}
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

// maxHosts bounds the referrer cache of the flusher.
const maxHosts = 10_000

// referrerHost is visitinfo.ReferrerHost, remembered: most visits come
// from a few referring pages. l.flushMu is held.
func (l *visitLog) referrerHost(ref string) string {
	if ref == "" {
		return ""
	}
	if h, ok := l.hosts[ref]; ok {
		return h
	}
	h := visitinfo.ReferrerHost(ref)
	if len(l.hosts) >= maxHosts {
		clear(l.hosts)
	}
	if len(ref) <= 2048 {
		l.hosts[ref] = h
	}
	return h
}

// close stops the flusher and writes what is queued.
func (l *visitLog) close(ctx context.Context) error {
	var err error
	l.closeOnce.Do(func() {
		close(l.stop)
		<-l.done
		err = l.flush(ctx)
	})
	return err
}
