package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Closing a listening socket resets every connection the kernel has
// accepted but the program has not yet taken (the listen backlog): their
// clients have sent a request, perhaps a POST, and learn only that the
// connection was reset. drainListener closes in three steps instead
// (Linux; elsewhere it closes at once):
//
//  1. it stops new connections: a socket filter makes the kernel drop new
//     SYNs (their clients retry the SYN about a second later and are then
//     refused: nothing was sent), and the handshakes already under way
//     get handshakeGrace to complete;
//  2. it takes every connection left in the backlog and stops the socket
//     listening, one system call after the other;
//  3. Accept hands those connections to the server, then reports the
//     listener closed.
//
// Where the kernel refuses the filter (some sandboxes), step 1 is skipped
// and a connection whose handshake completes between the two system calls
// of step 2 (about a microsecond) can still be reset.
type drainListener struct {
	net.Listener

	closing atomic.Bool
	drained chan struct{} // closed when backlog holds what step 2 took
	mu      sync.Mutex
	backlog []net.Conn

	closeOnce sync.Once
	closeErr  error
}

// handshakeGrace is how long handshakes under way get to complete once new
// connections are dropped: a round trip to the farthest client (a load
// balancer), with room.
const handshakeGrace = 50 * time.Millisecond

func newDrainListener(l net.Listener) *drainListener {
	return &drainListener{Listener: l, drained: make(chan struct{})}
}

// errListenerClosed is returned by Accept once the listener is closed.
var errListenerClosed = fmt.Errorf("listener closed: %w", net.ErrClosed)

// Accept returns the next connection; after Close, the connections the
// kernel had already accepted, then errListenerClosed.
func (l *drainListener) Accept() (net.Conn, error) {
	if !l.closing.Load() {
		c, err := l.Listener.Accept()
		if err == nil || !l.closing.Load() {
			return c, err
		}
	}
	<-l.drained
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.backlog) > 0 {
		c := l.backlog[0]
		l.backlog = l.backlog[1:]
		return c, nil
	}
	_ = l.closeNow()
	return nil, errListenerClosed
}

// Close drains the backlog (steps 1 and 2) and returns; Accept hands the
// connections over and closes the socket.
func (l *drainListener) Close() error {
	if l.closing.Swap(true) {
		return nil
	}
	conns, err := takeBacklog(l.Listener)
	l.mu.Lock()
	l.backlog = conns
	l.mu.Unlock()
	close(l.drained)
	if err != nil {
		return l.closeNow()
	}
	if d, ok := l.Listener.(interface{ SetDeadline(time.Time) error }); ok {
		_ = d.SetDeadline(time.Unix(1, 0)) // wake a pending Accept
	}
	return nil
}

func (l *drainListener) closeNow() error {
	l.closeOnce.Do(func() {
		l.closeErr = l.Listener.Close()
		if errors.Is(l.closeErr, os.ErrClosed) {
			l.closeErr = nil
		}
	})
	return l.closeErr
}
