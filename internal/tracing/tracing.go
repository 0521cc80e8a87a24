// Package tracing holds what the handlers of idp-proxy and the shortener
// share when they trace: taking a W3C trace context (traceparent,
// tracestate) from trusted callers only, and passing one on. It needs
// only the OpenTelemetry API; the SDK and the exporters are set up by
// package otlpexport, in the binaries.
package tracing

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ParsePrefixes parses CIDR prefixes ("10.0.0.0/8") and single addresses
// ("127.0.0.1", taken as /32 or /128).
func ParsePrefixes(ss []string) ([]netip.Prefix, error) {
	if len(ss) == 0 {
		return nil, nil
	}
	out := make([]netip.Prefix, 0, len(ss))
	for _, s := range ss {
		s = strings.TrimSpace(s)
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a CIDR prefix nor an IP address", s)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// traceContext reads and writes traceparent and tracestate.
var traceContext propagation.TraceContext

// Server starts server spans for incoming requests.
type Server struct {
	tracer  trace.Tracer
	trusted []netip.Prefix
}

// NewServer returns a Server whose spans come from tp's tracer named
// scope; trusted are the callers whose traceparent is continued. Nil
// when tp is nil: tracing is off.
func NewServer(tp trace.TracerProvider, scope string, trusted []netip.Prefix) *Server {
	if tp == nil {
		return nil
	}
	return &Server{tracer: tp.Tracer(scope), trusted: trusted}
}

// Tracer returns the Server's tracer.
func (s *Server) Tracer() trace.Tracer { return s.tracer }

// Start starts the server span of r. A trace context sent by a trusted
// caller (its address in the trusted prefixes) is continued: the span is
// its child, in its trace. One sent by any other caller starts a new
// trace and is recorded as a link only, so that nobody outside can join
// the service's traces or force their sampling.
func (s *Server) Start(r *http.Request, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	ctx := r.Context()
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...)}
	if _, ok := r.Header["Traceparent"]; ok {
		pctx := traceContext.Extract(ctx, propagation.HeaderCarrier(r.Header))
		if sc := trace.SpanContextFromContext(pctx); sc.IsValid() {
			if s.trustedPeer(r.RemoteAddr) {
				ctx = pctx
			} else {
				opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: sc,
					Attributes: []attribute.KeyValue{attribute.Bool("untrusted_parent", true)}}))
			}
		}
	}
	return s.tracer.Start(ctx, name, opts...)
}

// trustedPeer reports whether remote (an http.Request's RemoteAddr) is
// in a trusted prefix.
func (s *Server) trustedPeer(remote string) bool {
	if len(s.trusted) == 0 {
		return false
	}
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range s.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Inject writes the trace context of ctx's span into h as traceparent
// and tracestate (W3C Trace Context), replacing any there. With no valid
// span in ctx, it removes them: the trace context the service sends is
// its own.
func Inject(ctx context.Context, h http.Header) {
	delete(h, "Traceparent")
	delete(h, "Tracestate")
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return
	}
	// version "00", trace id, span id, flags: written as the W3C
	// propagator writes them, without its map carrier's allocations.
	const hexDigits = "0123456789abcdef"
	var b [55]byte
	tid, sid := sc.TraceID(), sc.SpanID()
	b[0], b[1], b[2] = '0', '0', '-'
	for i, x := range tid {
		b[3+2*i], b[4+2*i] = hexDigits[x>>4], hexDigits[x&15]
	}
	b[35] = '-'
	for i, x := range sid {
		b[36+2*i], b[37+2*i] = hexDigits[x>>4], hexDigits[x&15]
	}
	f := byte(sc.TraceFlags() & trace.FlagsSampled)
	b[52], b[53], b[54] = '-', hexDigits[f>>4], hexDigits[f&15]
	h["Traceparent"] = []string{string(b[:])}
	if ts := sc.TraceState().String(); ts != "" {
		h["Tracestate"] = []string{ts}
	}
}
