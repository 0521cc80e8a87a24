package server

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
)

// net/http answers a few malformed requests itself, before any handler
// runs, by writing a text/plain response straight to the connection: 431
// for oversized headers, 400 for a request it cannot parse, 501 for an
// unknown transfer encoding, 505 for an unsupported HTTP version. Every
// other answer of the project is application/problem+json (RFC 9457), so
// problemListener rewrites those few into the same shape, with the same
// status and net/http's own (generic, non-leaking) text as the detail.
//
// It sees plain HTTP only: over TLS the bytes are encrypted below it, and
// wrapping the *tls.Conn instead would hide it from net/http (no HTTP/2,
// no Request.TLS), so HTTPS listeners keep net/http's text/plain answers.

// rawErrorHeaders follow the status line of every such response.
const rawErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// problemListener wraps the connections of a plain-HTTP listener.
type problemListener struct{ net.Listener }

func (l problemListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &problemConn{Conn: c}, nil
}

// problemConn rewrites net/http's raw error responses on their way out.
type problemConn struct {
	net.Conn
	hijacked atomic.Bool // the handler owns the connection, or it speaks HTTP/2: never rewrite
	read     bool        // the first bytes were read (by the connection's reader only)
}

// h2Preface opens every connection of HTTP/2 with prior knowledge (h2c,
// Options.H2C): its frames are never net/http's raw HTTP/1 errors, even
// when a message happens to start with such bytes.
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

func (c *problemConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if !c.read && n > 0 {
		c.read = true
		if m := min(n, len(h2Preface)); m >= 3 && string(b[:m]) == h2Preface[:m] {
			c.hijacked.Store(true)
		}
	}
	return n, err
}

// markHijacked is the server's ConnState hook: a hijacked connection
// carries the handler's bytes, left alone.
func markHijacked(c net.Conn, s http.ConnState) {
	if s == http.StateHijacked {
		if pc, ok := c.(*problemConn); ok {
			pc.hijacked.Store(true)
		}
	}
}

func (c *problemConn) Write(b []byte) (int, error) {
	// "HTTP/1.1 4" or "HTTP/1.1 5": anything else (every answer that
	// succeeded) passes after two byte compares.
	if len(b) < 64 || b[0] != 'H' || b[9] != '4' && b[9] != '5' || c.hijacked.Load() {
		return c.Conn.Write(b)
	}
	out, ok := rewriteRawError(b)
	if !ok {
		return c.Conn.Write(b)
	}
	if _, err := c.Conn.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// CloseWrite keeps net/http's graceful close after an error answer (it
// half-closes TCP connections, so that the client reads the answer before
// a reset).
func (c *problemConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// rewriteRawError returns the problem+json form of b when b is one of
// net/http's raw error responses: "HTTP/1.1 NNN Text[: detail]" +
// rawErrorHeaders + body, written in one piece.
func rewriteRawError(b []byte) ([]byte, bool) {
	const proto = "HTTP/1.1 "
	if !bytes.HasPrefix(b, []byte(proto)) || len(b) < len(proto)+4 {
		return nil, false
	}
	i := bytes.Index(b, []byte(rawErrorHeaders))
	if i < 0 || bytes.IndexByte(b[:i], '\n') >= 0 {
		return nil, false
	}
	code, err := strconv.Atoi(string(b[len(proto) : len(proto)+3]))
	if err != nil || code < 400 || code > 599 || b[len(proto)+3] != ' ' {
		return nil, false
	}
	body := b[i+len(rawErrorHeaders):]
	if bytes.IndexByte(body, '\n') >= 0 || len(body) > 512 {
		return nil, false
	}
	// The body is "NNN Text" or "NNN Text: detail", or a bare detail.
	detail := string(body)
	prefix := strconv.Itoa(code) + " " + http.StatusText(code)
	switch {
	case detail == prefix:
		detail = ""
	case len(detail) > len(prefix)+2 && detail[:len(prefix)+2] == prefix+": ":
		detail = detail[len(prefix)+2:]
	}
	if code == http.StatusRequestHeaderFieldsTooLarge && detail == "" {
		detail = "the request's header fields are too large"
	}
	doc, _ := json.Marshal(struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail,omitempty"`
	}{"about:blank", http.StatusText(code), code, detail})
	doc = append(doc, '\n')
	var out bytes.Buffer
	out.WriteString(proto)
	out.WriteString(strconv.Itoa(code))
	out.WriteByte(' ')
	out.WriteString(http.StatusText(code))
	out.WriteString("\r\nContent-Type: application/problem+json\r\nContent-Length: ")
	out.WriteString(strconv.Itoa(len(doc)))
	out.WriteString("\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n")
	out.Write(doc)
	return out.Bytes(), true
}
