package tracing_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/idp-proxy/idp-proxy/internal/tracing"
	"github.com/idp-proxy/idp-proxy/internal/tracing/otlpexport"
	"github.com/idp-proxy/idp-proxy/internal/tracing/otlptest"
)

// setup is otlptest.Provider.
var setup = otlptest.Provider

func TestServerTrustsOnlyConfiguredCallers(t *testing.T) {
	h := otlptest.NewHTTP(t)
	p := setup(t, otlpexport.ProtocolHTTP, h.Endpoint())
	trusted, err := tracing.ParsePrefixes([]string{"10.0.0.0/8", "192.0.2.7"})
	if err != nil {
		t.Fatal(err)
	}
	srv := tracing.NewServer(p.TracerProvider(), "test", trusted)
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, remote := range []string{"10.1.2.3:5000", "192.0.2.7:1", "[::ffff:10.0.0.1]:80", "192.0.2.8:1", "[::1]:80"} {
		r := httptest.NewRequest("GET", "/x", nil)
		r.RemoteAddr = remote
		r.Header.Set("Traceparent", parent)
		r.Header.Set("Tracestate", "vendor=1")
		ctx, span := srv.Start(r, "req "+remote)
		out := http.Header{"Traceparent": {"stale"}}
		tracing.Inject(ctx, out)
		if got := out.Get("Traceparent"); got == "stale" || !strings.HasPrefix(got, "00-") {
			t.Errorf("%s: injected traceparent %q", remote, got)
		}
		span.End()
	}
	_ = p.Shutdown(context.Background())
	for _, s := range h.Spans() {
		trust := strings.HasSuffix(s.Name, "10.1.2.3:5000") || strings.HasSuffix(s.Name, "192.0.2.7:1") || strings.HasSuffix(s.Name, "[::ffff:10.0.0.1]:80")
		cont := s.TraceID == "0af7651916cd43dd8448eb211c80319c" && s.ParentID == "b7ad6b7169203331"
		if cont != trust {
			t.Errorf("%s: continued the caller's trace: %v, want %v", s.Name, cont, trust)
		}
		if !trust && (len(s.Links) != 1 || s.Links[0].SpanID != "b7ad6b7169203331" || s.ParentID != "") {
			t.Errorf("%s: untrusted parent not a link of a new root: %+v", s.Name, s)
		}
	}
	if _, err := tracing.ParsePrefixes([]string{"10.0.0.0/33"}); err == nil {
		t.Error("10.0.0.0/33 parsed")
	}
}

// TestInjectMatchesW3CPropagator: Inject writes what OpenTelemetry's W3C
// propagator writes, sampled or not, with or without tracestate, and
// removes a stale trace context when there is no span.
func TestInjectMatchesW3CPropagator(t *testing.T) {
	ts, _ := trace.ParseTraceState("vendor=1,other=x")
	for _, sc := range []trace.SpanContext{
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: [16]byte{0x0a, 0xf7, 15: 0x9c}, SpanID: [8]byte{0xb7, 7: 0x31}, TraceFlags: trace.FlagsSampled}),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: [16]byte{1, 15: 0xff}, SpanID: [8]byte{0xff, 7: 1}, TraceState: ts}),
	} {
		ctx := trace.ContextWithSpanContext(t.Context(), sc)
		got, want := http.Header{"Traceparent": {"stale"}, "Tracestate": {"stale=1"}}, http.Header{}
		tracing.Inject(ctx, got)
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(want))
		if got.Get("Traceparent") != want.Get("Traceparent") || got.Get("Tracestate") != want.Get("Tracestate") {
			t.Errorf("Inject wrote %v, the propagator %v", got, want)
		}
	}
	h := http.Header{"Traceparent": {"stale"}, "Tracestate": {"stale=1"}}
	tracing.Inject(t.Context(), h)
	if len(h) != 0 {
		t.Errorf("without a span: %v", h)
	}
}
