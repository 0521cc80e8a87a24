package proxy

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Request framing and response cookies: what the proxy refuses to pass on
// between a client and the upstream even when each side parses it.

// closeAfterChunked makes the server close the connection after answering
// a request whose body was chunked. RFC 9112 §6.1: a request with both
// Transfer-Encoding and Content-Length "ought to be handled as an error"
// and the connection closed after responding, since the two framings are
// how requests are smuggled past one parser and into another. Go's server
// uses Transfer-Encoding and deletes Content-Length before any handler
// runs, so the two cannot be told apart here: every request with a
// chunked body is answered with Connection: close. Browsers never send
// chunked request bodies; clients that stream uploads keep working, on a
// new connection for the next request.
func closeAfterChunked(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 1 && len(r.TransferEncoding) > 0 {
		w.Header().Set("Connection", "close")
	}
}

// clientBody marks the errors of reading the client's request body, so
// that a malformed body (a bad chunk) is answered as the client's fault
// (400), not as the upstream's (502): the transport returns the body's
// read error to ReverseProxy's ErrorHandler like any failure to reach the
// upstream.
//
// It also remembers a read timeout: the server then cancels the request's
// context, and the transport may report that cancellation rather than the
// body's error.
type clientBody struct {
	io.ReadCloser
	mu       sync.Mutex // held during Read
	timedOut bool       // a read ended at the server's read deadline
}

func (b *clientBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		var mbe *http.MaxBytesError
		if !errors.As(err, &mbe) {
			b.timedOut = b.timedOut || isTimeout(err)
			err = &bodyError{err: err}
		}
	}
	return n, err
}

// clientBodyKey keys the request's *clientBody in its context (ReverseProxy
// hands ErrorHandler its own copy of the request, with the body wrapped).
type clientBodyKey struct{}

// bodyTimedOut reports whether the request's body ended at the server's
// read deadline. The read that failed may still be returning (the server
// cancels the context first): it waits for it, briefly.
func bodyTimedOut(r *http.Request) bool {
	b, _ := r.Context().Value(clientBodyKey{}).(*clientBody)
	if b == nil {
		return false
	}
	for range 100 {
		if b.mu.TryLock() {
			defer b.mu.Unlock()
			return b.timedOut
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

// bodyError is an error reading the client's request body.
type bodyError struct{ err error }

func (e *bodyError) Error() string { return "reading the request body: " + e.err.Error() }
func (e *bodyError) Unwrap() error { return e.err }

// errMalformedBody is the detail of a 400 for a body that does not parse.
var errMalformedBody = errors.New("the request body is malformed (invalid chunked encoding)")

// reservedCookies are the cookies of the proxy and its plugin (token,
// login state, sessions): the upstream may not set or clear them.
type reservedCookies map[string]struct{}

func newReservedCookies(names []string) reservedCookies {
	rc := make(reservedCookies, 3*len(names))
	for _, n := range names {
		if n == "" {
			continue
		}
		rc[n] = struct{}{}
		// The prefixed spellings are other cookies to the browser, but a
		// proxy that moves to __Host- cookies must not be undercut by an
		// upstream setting them first.
		rc["__Host-"+n] = struct{}{}
		rc["__Secure-"+n] = struct{}{}
	}
	return rc
}

// strip removes from h the Set-Cookie lines that name a reserved cookie
// and reports the names removed.
func (rc reservedCookies) strip(h http.Header) (removed []string) {
	lines := h["Set-Cookie"]
	if len(lines) == 0 || len(rc) == 0 {
		return nil
	}
	kept := lines[:0:0]
	for _, line := range lines {
		name, _, _ := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if _, reserved := rc[name]; reserved {
			removed = append(removed, name)
			continue
		}
		kept = append(kept, line)
	}
	if removed == nil {
		return nil
	}
	if len(kept) == 0 {
		delete(h, "Set-Cookie")
	} else {
		h["Set-Cookie"] = kept
	}
	return removed
}
