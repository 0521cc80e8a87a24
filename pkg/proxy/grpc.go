package proxy

import (
	"context"
	"net/http"
	"net/http/httputil"
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
	// No negative FlushInterval: ReverseProxy would flush the headers of
	// every answer at once, from a timer racing with the end of the copy
	// (golang/go#56317). For an upstream's trailers-only answer (HEADERS
	// with grpc-status and END_STREAM) a flush that wins sends the headers
	// without END_STREAM and ends the stream with an empty DATA frame,
	// which gRPC clients take for a call without status (Internal "server
	// closed the stream without sending trailers"). Instead the answers
	// with a body are made to flush each write, see grpcFlush.
	modify := rp.ModifyResponse
	rp.ModifyResponse = func(resp *http.Response) error {
		grpcFlush(resp)
		return modify(resp)
	}
	return &grpcForward{rp: rp, streamTimeout: c.StreamTimeout}
}

// grpcFlush makes ReverseProxy send every message of resp at once,
// whatever the upstream's framing, and a bodiless answer (the HTTP/2
// transport gives a length of 0 to a stream ended with its headers) in
// one piece when the handler returns: with FlushInterval 0, ReverseProxy
// flushes each write of the answers of unknown length (-1) and never
// flushes the others before their trailers.
func grpcFlush(resp *http.Response) {
	if resp.ContentLength != 0 {
		resp.ContentLength = -1
	}
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
