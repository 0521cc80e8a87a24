package shortener

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync/atomic"
	"time"
)

// ErrStoreUnresponsive is returned, at once, for a store call made while
// the store is known not to answer (a call on one link ran out of
// Options.StoreTimeout and none has answered since) and another call is already finding out
// whether it answers again. Handlers answer it 503 "the link store is
// unavailable", like any other store failure.
var ErrStoreUnresponsive = errors.New("shortener: the link store does not answer; one call at a time is trying it")

// storeGate lets calls through to the store, and holds back all but one
// while the store does not answer. Without it every request of a frozen
// store (PostgreSQL stopped with SIGSTOP, a network black hole) would
// wait the whole store timeout for the same 503, and a replica serving
// thousands of redirects a second would serve a few. Once a call has run
// out of its time, later calls are refused at once with
// ErrStoreUnresponsive, except one: the probe, which goes to the store
// with the usual timeout. The first call that ends within its time (with
// any result: the store answered) lets every call through again.
type storeGate struct {
	timeout time.Duration
	ping    func(context.Context) error // the store's Ping, for background probes
	log     *slog.Logger

	unanswered atomic.Bool // a call ran out of time; none has answered since
	probing    atomic.Bool // the one call let through while unanswered is under way
}

func newStoreGate(timeout time.Duration, ping func(context.Context) error, log *slog.Logger) *storeGate {
	return &storeGate{timeout: timeout, ping: ping, log: log}
}

// enter admits a call, or refuses it with ErrStoreUnresponsive. probe
// reports whether the call is the one let through while the store does
// not answer; pass it to leave.
func (g *storeGate) enter() (probe bool, err error) {
	if !g.unanswered.Load() {
		return false, nil
	}
	if g.probing.CompareAndSwap(false, true) {
		return true, nil
	}
	return false, ErrStoreUnresponsive
}

// leave records how a call admitted by enter ended: parent is the
// caller's context, ctx the call's (with the store timeout), err its
// result. A call whose caller gave up says nothing about the store, nor
// does a bulk call that timed out (bulk is true: a statistics query or a
// batch may be slow with the store well); any call that ends in time says
// it answers.
func (g *storeGate) leave(probe, bulk bool, parent, ctx context.Context, err error) {
	if parent.Err() == nil {
		if err != nil && (ctx.Err() != nil || isTimeout(err)) {
			if !bulk && !g.unanswered.Swap(true) {
				g.log.Warn("the link store does not answer: one call at a time tries it, the others answer 503 at once; cached links are still redirected", "timeout", g.timeout, "err", err)
			}
		} else if g.unanswered.Swap(false) {
			g.log.Info("the link store answers again")
		}
	}
	if probe {
		g.probing.Store(false)
	}
}

// down reports whether the store is known not to answer.
func (g *storeGate) down() bool { return g.unanswered.Load() }

// probeInBackground starts a probe (a Ping with the store timeout) unless
// the store answers or a probe is under way: callers that do not need the
// store themselves (a redirect served from the cache) still learn when it
// answers again.
func (g *storeGate) probeInBackground() {
	if !g.unanswered.Load() || g.probing.Load() || !g.probing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		parent := context.Background()
		ctx, cancel := context.WithTimeout(parent, g.timeout)
		defer cancel()
		g.leave(true, false, parent, ctx, g.ping(ctx))
	}()
}

// isTimeout reports whether err says that something timed out (a
// deadline, or a network timeout such as a DSN's connect_timeout).
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
