// Package tracing sets up OpenTelemetry tracing for idp-proxy and the
// shortener, and holds what their handlers share: taking a W3C trace
// context (traceparent, tracestate) from trusted callers only, and
// passing one on.
//
// The exporter is configured by the standard OTEL_* environment variables:
// OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// OTEL_EXPORTER_OTLP_PROTOCOL and OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
// ("http/protobuf", the default, or "grpc"), OTEL_EXPORTER_OTLP_HEADERS,
// OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG, OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES,
// and the batch processor's OTEL_BSP_*.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Options configure Setup.
type Options struct {
	// ServiceName is the service.name resource attribute unless
	// OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES)
	// names another. Required.
	ServiceName string
	// ServiceVersion is the service.version resource attribute. [none]
	ServiceVersion string
	// Getenv reads the environment. [os.Getenv] The exporter and the SDK
	// read the process environment themselves: Getenv only serves the
	// checks Setup makes first (protocol, sampler).
	Getenv func(string) string
}

// Provider is the process's tracer provider and its exporter.
type Provider struct {
	tp       *sdktrace.TracerProvider
	protocol string
}

// TracerProvider returns the provider to give to pkg/idp, pkg/proxy and
// pkg/shortener.
func (p *Provider) TracerProvider() trace.TracerProvider { return p.tp }

// Protocol is the OTLP protocol in use: "http/protobuf" or "grpc".
func (p *Provider) Protocol() string { return p.protocol }

// Shutdown exports the spans still queued and stops the exporter; ctx
// bounds the wait.
func (p *Provider) Shutdown(ctx context.Context) error {
	if err := p.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: shutdown: %w", err)
	}
	return nil
}

// Protocols are the values of OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL that
// Setup accepts.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// samplers are the values of OTEL_TRACES_SAMPLER that the SDK implements.
var samplers = []string{"always_on", "always_off", "traceidratio",
	"parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"}

// Setup builds the tracer provider the OTEL_* variables describe, with
// a batching OTLP exporter. It contacts nothing: the exporter connects
// when it first exports. A protocol or sampler it does not support is an
// error naming the variable.
func Setup(ctx context.Context, o Options) (*Provider, error) {
	if o.ServiceName == "" {
		return nil, errors.New("tracing: Options.ServiceName is required")
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	protocol, err := protocolOf(getenv)
	if err != nil {
		return nil, err
	}
	if s := getenv("OTEL_TRACES_SAMPLER"); s != "" {
		known := false
		for _, k := range samplers {
			known = known || s == k
		}
		if !known {
			return nil, fmt.Errorf("tracing: OTEL_TRACES_SAMPLER=%q: want one of %s", s, strings.Join(samplers, ", "))
		}
		if a := getenv("OTEL_TRACES_SAMPLER_ARG"); a != "" && strings.HasSuffix(s, "traceidratio") {
			if f, err := strconv.ParseFloat(a, 64); err != nil || f < 0 || f > 1 {
				return nil, fmt.Errorf("tracing: OTEL_TRACES_SAMPLER_ARG=%q: want a ratio between 0 and 1", a)
			}
		}
	}
	var exp sdktrace.SpanExporter
	switch protocol {
	case ProtocolGRPC:
		exp, err = otlptracegrpc.New(ctx)
	default:
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter (%s): %w", protocol, err)
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", o.ServiceName)}
	if o.ServiceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", o.ServiceVersion))
	}
	// Later detectors win: the environment over the program's defaults.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("tracing: OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Provider{tp: tp, protocol: protocol}, nil
}

// protocolOf reads the OTLP protocol, the traces variable first.
func protocolOf(getenv func(string) string) (string, error) {
	for _, k := range [...]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		switch v := strings.TrimSpace(getenv(k)); v {
		case "":
			continue
		case ProtocolHTTP, ProtocolGRPC:
			return v, nil
		default:
			return "", fmt.Errorf("tracing: %s=%q: want %q or %q", k, v, ProtocolHTTP, ProtocolGRPC)
		}
	}
	return ProtocolHTTP, nil
}

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
