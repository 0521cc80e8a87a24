// Package faultnet puts a TCP proxy on loopback between a test and a real
// dependency (PostgreSQL, Redis, an identity provider) so that the test
// can make the dependency hang or vanish without stopping it: Freeze stops
// forwarding bytes on every connection, old and new, as a frozen process
// or a black-holed network would; Down refuses new connections and closes
// the open ones, as a stopped process would.
package faultnet

import (
	"bytes"
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections from its loopback address to a target.
type Proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	frozen bool
	thaw   chan struct{} // closed by Thaw
	conns  map[net.Conn]struct{}
	down   bool
	closed bool
	cut    []byte // CutAfter's pattern, until it matched
	wg     sync.WaitGroup
}

// New starts a proxy to target (host:port) and closes it at the end of t.
func New(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("faultnet: listen: %v", err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}, thaw: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's host:port, to use in place of the target's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Freeze stops forwarding: bytes sent either way are held, and new
// connections are accepted but neither connected nor answered, until Thaw.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.frozen {
		p.frozen = true
		p.thaw = make(chan struct{})
	}
}

// Thaw resumes forwarding on every connection.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen {
		p.frozen = false
		close(p.thaw)
	}
}

// Down closes every open connection and refuses new ones (they are closed
// at once) until Up.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// CutAfter arms a one-time fault: the next chunk a client sends that
// contains pattern is forwarded to the target, then that client's
// connection is closed, and whatever the target answers is dropped (its
// side is closed once it answered). As a network that fails right after
// delivering a request: a COMMIT that the database carries out and whose
// acknowledgement never arrives.
func (p *Proxy) CutAfter(pattern []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = bytes.Clone(pattern)
}

// cutNow reports whether chunk matches the armed CutAfter pattern, and
// disarms it when it does.
func (p *Proxy) cutNow(chunk []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut == nil || !bytes.Contains(chunk, p.cut) {
		return false
	}
	p.cut = nil
	return true
}

// Up accepts and forwards connections again.
func (p *Proxy) Up() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	_ = p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	if p.frozen {
		p.frozen = false
		close(p.thaw)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// gate blocks while the proxy is frozen; it reports false once closed.
func (p *Proxy) gate() bool {
	p.mu.Lock()
	frozen, thaw, closed := p.frozen, p.thaw, p.closed
	p.mu.Unlock()
	if frozen {
		<-thaw
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed && !closed
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.down {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	defer p.untrack(c)
	if !p.gate() {
		return
	}
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(u) {
		return
	}
	defer p.untrack(u)
	var wg sync.WaitGroup
	wg.Go(func() { p.pipe(u, c, true) })
	p.pipe(c, u, false)
	wg.Wait()
}

// pipe copies src to dst, holding each chunk while the proxy is frozen;
// fromClient is the direction CutAfter watches.
func (p *Proxy) pipe(dst, src net.Conn, fromClient bool) {
	closeBoth := true
	defer func() {
		if closeBoth {
			_ = dst.Close()
		}
		_ = src.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.gate() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			if fromClient && p.cutNow(buf[:n]) {
				// The target's side stays open: the other pipe closes it
				// when the answer arrives and cannot reach the client.
				closeBoth = false
				return
			}
		}
		if err != nil { // EOF or closed: close both ways
			return
		}
	}
}
