// Package keepalivetest serves HTTP like a server at its keep-alive
// timeout, for tests of the clients that talk to such servers.
//
// Node.js and Apache close a keep-alive connection after 5 s idle. A
// client that sends its next request on that connection at that moment
// gets "connection reset by peer"; Go's transport retries a GET then, but
// not a POST. NewServer makes that moment certain: it resets a connection
// that has been idle for at least idle when the next request arrives on
// it.
package keepalivetest

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

type connKey struct{}

// NewServer starts a loopback server answering with h, except that a
// request arriving on a connection idle for idle or longer since its last
// answer gets the connection reset (TCP RST) instead. Close it when done.
func NewServer(idle time.Duration, h http.Handler) *httptest.Server {
	var (
		mu       sync.Mutex
		lastDone = map[net.Conn]time.Time{}
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(net.Conn)
		mu.Lock()
		last, reused := lastDone[c]
		mu.Unlock()
		if reused && time.Since(last) >= idle {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					_ = tc.SetLinger(0) // close with RST, as under a request in flight
				}
				_ = conn.Close()
			}
			return
		}
		h.ServeHTTP(w, r)
		mu.Lock()
		lastDone[c] = time.Now()
		mu.Unlock()
	}))
	srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) }
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateClosed || s == http.StateHijacked {
			mu.Lock()
			delete(lastDone, c)
			mu.Unlock()
		}
	}
	srv.Start()
	return srv
}
