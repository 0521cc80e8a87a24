package server

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// http.Server.Shutdown closes, unanswered, every connection whose request
// it reads after the shutdown began: a connection accepted a moment before
// the stop, whose request was still on its way, is closed under its
// client. Run therefore waits, before calling Shutdown, until every
// connection it accepted has handed its first request to the handler (or
// gone): connTracker knows which have not.
type connTracker struct {
	mu      sync.Mutex
	pending map[net.Conn]struct{}
	changed chan struct{} // a pending connection went away (1-buffered)
}

func newConnTracker() *connTracker {
	return &connTracker{pending: make(map[net.Conn]struct{}), changed: make(chan struct{}, 1)}
}

// trackedConn is a connection in its context: the handler marks it.
type trackedConn struct {
	c       net.Conn
	started atomic.Bool // a request of it reached the handler
}

type trackedConnKey struct{}

// connContext is the server's ConnContext: c is pending from its accept.
func (t *connTracker) connContext(ctx context.Context, c net.Conn) context.Context {
	t.mu.Lock()
	t.pending[c] = struct{}{}
	t.mu.Unlock()
	return context.WithValue(ctx, trackedConnKey{}, &trackedConn{c: c})
}

// connState is (part of) the server's ConnState hook: a connection that is
// idle (it has been answered), closed or hijacked is no longer pending.
func (t *connTracker) connState(c net.Conn, s http.ConnState) {
	switch s {
	case http.StateIdle, http.StateClosed, http.StateHijacked:
		t.done(c)
	}
}

// handler marks the connection of each request as started.
func (t *connTracker) handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tc, ok := r.Context().Value(trackedConnKey{}).(*trackedConn); ok && !tc.started.Load() && tc.started.CompareAndSwap(false, true) {
			t.done(tc.c)
		}
		h.ServeHTTP(w, r)
	})
}

func (t *connTracker) done(c net.Conn) {
	t.mu.Lock()
	_, ok := t.pending[c]
	delete(t.pending, c)
	t.mu.Unlock()
	if ok {
		select {
		case t.changed <- struct{}{}:
		default:
		}
	}
}

// wait returns when no connection is pending, or with ctx's error.
func (t *connTracker) wait(ctx context.Context) error {
	for {
		t.mu.Lock()
		n := len(t.pending)
		t.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-t.changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
