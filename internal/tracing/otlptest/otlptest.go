// Package otlptest is an OTLP trace receiver for tests: it decodes the
// collector protocol (OTLP/HTTP protobuf, and OTLP/gRPC) as a collector
// would and keeps the spans it receives.
package otlptest

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/idp-proxy/idp-proxy/internal/tracing/otlpexport"
)

// Span is a received span, flattened.
type Span struct {
	Service  string // the resource's service.name
	Scope    string
	Name     string
	TraceID  string // hex
	SpanID   string
	ParentID string // "" for a root span
	Kind     tracepb.Span_SpanKind
	Attrs    map[string]string // values as text
	Links    []Link
	Status   tracepb.Status_StatusCode
	Events   []string // event names, with their attributes' values after a '|'
}

// Link is a span link.
type Link struct {
	TraceID, SpanID string
	Attrs           map[string]string
}

// Receiver keeps what it received.
type Receiver struct {
	mu       sync.Mutex
	spans    []Span
	requests int
	changed  chan struct{}
}

func newReceiver() *Receiver { return &Receiver{changed: make(chan struct{}, 1)} }

func (rc *Receiver) add(req *coltrace.ExportTraceServiceRequest) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.requests++
	for _, rs := range req.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{
					Service: service, Scope: ss.GetScope().GetName(), Name: s.GetName(),
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					Kind: s.GetKind(), Attrs: attrs(s.GetAttributes()), Status: s.GetStatus().GetCode(),
				}
				if p := s.GetParentSpanId(); len(p) > 0 {
					sp.ParentID = hex.EncodeToString(p)
				}
				for _, l := range s.GetLinks() {
					sp.Links = append(sp.Links, Link{TraceID: hex.EncodeToString(l.GetTraceId()),
						SpanID: hex.EncodeToString(l.GetSpanId()), Attrs: attrs(l.GetAttributes())})
				}
				for _, e := range s.GetEvents() {
					ev := e.GetName()
					for _, v := range attrs(e.GetAttributes()) {
						ev += "|" + v
					}
					sp.Events = append(sp.Events, ev)
				}
				rc.spans = append(rc.spans, sp)
			}
		}
	}
	select {
	case rc.changed <- struct{}{}:
	default:
	}
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = valueString(kv.GetValue())
	}
	return m
}

func valueString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *commonpb.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, valueString(e))
		}
		return "[" + strings.Join(parts, ",") + "]"
	case *commonpb.AnyValue_BytesValue:
		return string(x.BytesValue)
	}
	return v.String()
}

// Spans returns a copy of the spans received so far.
func (rc *Receiver) Spans() []Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Span(nil), rc.spans...)
}

// Requests is the number of export requests received.
func (rc *Receiver) Requests() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.requests
}

// WaitFor waits up to 10 s until the spans received satisfy ok, and
// fails t otherwise; it returns the spans.
func (rc *Receiver) WaitFor(t testing.TB, what string, ok func([]Span) bool) []Span {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		s := rc.Spans()
		if ok(s) {
			return s
		}
		select {
		case <-rc.changed:
		case <-deadline:
			t.Fatalf("otlptest: no %s after 10s; received:\n%s", what, Dump(s))
			return nil
		}
	}
}

// Named returns the spans named name.
func Named(spans []Span, name string) []Span {
	var out []Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// Dump lists spans one a line, for failure messages.
func Dump(spans []Span) string {
	var b strings.Builder
	for _, s := range spans {
		keys := make([]string, 0, len(s.Attrs))
		for k := range s.Attrs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "%s %s trace=%s span=%s parent=%s kind=%v", s.Service, s.Name, s.TraceID, s.SpanID, s.ParentID, s.Kind)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%q", k, s.Attrs[k])
		}
		for _, l := range s.Links {
			fmt.Fprintf(&b, " link=%s/%s", l.TraceID, l.SpanID)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// HTTP is a receiver of OTLP/HTTP protobuf at /v1/traces.
type HTTP struct {
	*Receiver
	srv *httptest.Server
}

// NewHTTP starts an OTLP/HTTP receiver on loopback, closed at the end of
// the test.
func NewHTTP(t testing.TB) *HTTP {
	rc := newReceiver()
	h := &HTTP{Receiver: rc}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Method != http.MethodPost {
			http.Error(w, "not an OTLP traces export", http.StatusNotFound)
			return
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
			http.Error(w, "content type "+ct+": want application/x-protobuf", http.StatusUnsupportedMediaType)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, "not an ExportTraceServiceRequest: "+err.Error(), http.StatusBadRequest)
			return
		}
		rc.add(&req)
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// Endpoint is the base URL for OTEL_EXPORTER_OTLP_ENDPOINT.
func (h *HTTP) Endpoint() string { return h.srv.URL }

// GRPC is a receiver of OTLP/gRPC.
type GRPC struct {
	*Receiver
	addr string
}

type traceService struct {
	coltrace.UnimplementedTraceServiceServer
	rc *Receiver
}

func (s traceService) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	s.rc.add(req)
	return &coltrace.ExportTraceServiceResponse{}, nil
}

// NewGRPC starts an OTLP/gRPC receiver on loopback, stopped at the end of
// the test.
func NewGRPC(t testing.TB) *GRPC {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rc := newReceiver()
	srv := grpc.NewServer()
	coltrace.RegisterTraceServiceServer(srv, traceService{rc: rc})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return &GRPC{Receiver: rc, addr: ln.Addr().String()}
}

// Endpoint is the URL for OTEL_EXPORTER_OTLP_ENDPOINT (insecure).
func (g *GRPC) Endpoint() string { return "http://" + g.addr }

// Provider points the OTEL_* variables at endpoint (a receiver of this
// package), samples every span, clears OTEL_SERVICE_NAME, and returns
// otlpexport's provider for protocol, service "svc-test".
func Provider(t *testing.T, protocol, endpoint string) *otlpexport.Provider {
	t.Helper()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	t.Setenv("OTEL_SERVICE_NAME", "")
	p, err := otlpexport.Setup(t.Context(), otlpexport.Options{ServiceName: "svc-test"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Protocol() != protocol {
		t.Fatalf("protocol %q, want %q", p.Protocol(), protocol)
	}
	return p
}
