package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"time"
)

// gRPC calls through the proxy. A gRPC call is an HTTP/2 POST whose
// Content-Type is application/grpc[+codec] (gRPC-Web: application/grpc-web…,
// also over HTTP/1.1). It is judged by the rules as any request (its path
// is /package.Service/Method) and forwarded by ReverseProxy, which streams
// both ways, flushes every message at once (a response without a length)
// and passes trailers, grpc-status included, unchanged. What differs:
//
//   - the proxy's own answers (refusals, upstream failures) are gRPC
//     answers, trailers-only: HTTP 200 with grpc-status and grpc-message,
//     which gRPC clients report as that code, where an HTTP 401 would be
//     "unexpected HTTP status code";
//   - the call is bounded by the upstream's stream_timeout instead of the
//     server's read and write timeouts (per request, through
//     http.ResponseController) and of the upstream's response-header
//     timeout (a server stream may send its headers with its first
//     message, minutes later); and by no body limit: gRPC servers bound
//     each message themselves, and a long client stream may carry any
//     total.

// isGRPC reports whether r is a gRPC (or gRPC-Web) call.
func isGRPC(r *http.Request) bool {
	ct := r.Header["Content-Type"]
	if len(ct) != 1 {
		return false
	}
	rest, ok := strings.CutPrefix(ct[0], "application/grpc")
	return ok && (rest == "" || rest[0] == '+' || rest[0] == ';' || strings.HasPrefix(rest, "-web"))
}

// grpcForward forwards the gRPC calls of one upstream: its transport
// without a response-header timeout, its calls bounded by streamTimeout.
type grpcForward struct {
	rp            *httputil.ReverseProxy
	streamTimeout time.Duration
}

// newGRPCForward returns the gRPC forwarder of an upstream whose other
// requests go through tr.
func (p *Proxy) newGRPCForward(tr http.RoundTripper, c UpstreamConfig, rewrite func(*httputil.ProxyRequest)) *grpcForward {
	if t, ok := tr.(*http.Transport); ok {
		t = t.Clone()
		t.ResponseHeaderTimeout = 0 // the call's deadline bounds it
		tr = t
	}
	rp := p.newReverseProxy(p.traced(tr), rewrite)
	rp.FlushInterval = -1 // every message at once, whatever the upstream's framing
	return &grpcForward{rp: rp, streamTimeout: c.StreamTimeout}
}

// serve forwards the call r, whose deadlines become the stream timeout's.
func (g *grpcForward) serve(w http.ResponseWriter, r *http.Request) {
	d := g.streamTimeout
	if d <= 0 {
		d = DefaultStreamTimeout
	}
	deadline := time.Now().Add(d)
	rc := http.NewResponseController(w)
	// The connection's deadlines come a little later than the call's, so
	// that a call ended by its deadline before any answer still gets
	// DEADLINE_EXCEEDED (upstreamError), not a reset stream. Not every
	// writer has deadlines (a test recorder); the server's own ones then
	// stay.
	_ = rc.SetReadDeadline(deadline.Add(answerGrace))
	_ = rc.SetWriteDeadline(deadline.Add(answerGrace))
	ctx, cancel := context.WithDeadline(r.Context(), deadline)
	defer cancel()
	g.rp.ServeHTTP(w, r.WithContext(ctx))
}

// answerGrace is the time given to write the answer of a call that
// reached its deadline.
const answerGrace = time.Second

// gRPC status codes (google.golang.org/grpc/codes), those the proxy sends.
const (
	grpcUnknown           = 2
	grpcInvalidArgument   = 3
	grpcDeadlineExceeded  = 4
	grpcPermissionDenied  = 7
	grpcResourceExhausted = 8
	grpcUnimplemented     = 12
	grpcInternal          = 13
	grpcUnavailable       = 14
	grpcUnauthenticated   = 16
)

// grpcCode is the gRPC status of the proxy's HTTP answer status.
func grpcCode(status int) int {
	switch status {
	case http.StatusUnauthorized:
		return grpcUnauthenticated
	case http.StatusForbidden:
		return grpcPermissionDenied
	case http.StatusBadRequest:
		return grpcInvalidArgument
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusMisdirectedRequest:
		return grpcUnimplemented
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return grpcDeadlineExceeded
	case http.StatusRequestEntityTooLarge, http.StatusTooManyRequests:
		return grpcResourceExhausted
	case http.StatusBadGateway, http.StatusServiceUnavailable:
		return grpcUnavailable
	case http.StatusInternalServerError:
		return grpcInternal
	}
	return grpcUnknown
}

// grpcAnswer collects an answer written for HTTP clients (problem+json,
// by the plugin or the proxy) to send it as a gRPC one by finish. Its
// headers (WWW-Authenticate, Retry-After) are kept.
type grpcAnswer struct {
	w      http.ResponseWriter
	r      *http.Request
	status int
	body   []byte
}

// asGRPC returns w as is for requests that are no gRPC calls, else a
// grpcAnswer and its finish, to call once the answer is written.
func asGRPC(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, func()) {
	if !isGRPC(r) {
		return w, func() {}
	}
	g := &grpcAnswer{w: w, r: r}
	return g, g.finish
}

func (g *grpcAnswer) Header() http.Header { return g.w.Header() }

func (g *grpcAnswer) WriteHeader(code int) {
	if g.status == 0 && code >= 200 {
		g.status = code
	}
}

func (g *grpcAnswer) Write(b []byte) (int, error) {
	if g.status == 0 {
		g.status = http.StatusOK
	}
	if len(g.body) < 8<<10 {
		g.body = append(g.body, b...)
	}
	return len(b), nil
}

// finish writes the trailers-only gRPC answer: HTTP 200, the gRPC code of
// the HTTP status, the problem's detail as grpc-message.
func (g *grpcAnswer) finish() {
	h := g.w.Header()
	var doc struct{ Title, Detail string }
	_ = json.Unmarshal(g.body, &doc) // problem+json; otherwise the status text
	msg := doc.Detail
	if msg == "" {
		msg = doc.Title
	}
	if msg == "" {
		msg = http.StatusText(g.status)
	}
	for _, k := range [...]string{"Content-Length", "Content-Encoding", "Content-Language", "Etag", "Last-Modified"} {
		delete(h, k)
	}
	ct := "application/grpc"
	if v := g.r.Header.Get("Content-Type"); strings.HasPrefix(v, "application/grpc-web") {
		ct = v // gRPC-Web clients read its trailers-only answer in these headers
	}
	h.Set("Content-Type", ct)
	h.Set("Grpc-Status", strconv.Itoa(grpcCode(g.status)))
	h.Set("Grpc-Message", grpcPercentEncode(msg))
	g.w.WriteHeader(http.StatusOK)
}

// grpcPercentEncode encodes a grpc-message value as the gRPC over HTTP/2
// specification says: bytes outside printable ASCII, and '%', as %XX.
func grpcPercentEncode(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '%' {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '%' {
			b = append(b, '%', hex[c>>4], hex[c&15])
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}
