package shortener_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/memstore"
)

// TestTracing: each request is a server span named after its route, the
// store calls are its children, a trusted caller's trace is continued and
// no span carries the URL, the query or the owner.
func TestTracing(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	svc := newService(t, memstore.New(), shortener.Options{TracerProvider: tp})
	h := newHandler(t, svc, shortener.HandlerOptions{
		TracerProvider:      tp,
		TrustedTraceParents: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")},
		Owner:               func(*http.Request) string { return "owner-claim-value" },
	})

	const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	req := httptest.NewRequest("POST", "/shorten", strings.NewReader(`{"url":"https://example.com/private-target"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Traceparent", caller)
	req.RemoteAddr = "192.0.2.1:5000" // trusted
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != 201 {
		t.Fatalf("POST /shorten: %d %s", w.Code, w.Body)
	}
	var c created
	_ = json.Unmarshal(w.Body.Bytes(), &c)
	req = httptest.NewRequest("GET", "/"+c.ShortCode+"?utm=secret-query", nil)
	req.Header.Set("Traceparent", caller)
	req.RemoteAddr = "198.51.100.1:5000" // not trusted
	w = httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != 302 {
		t.Fatalf("GET: %d", w.Code)
	}

	spans := rec.Ended()
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = s
	}
	post, get := byName["POST /shorten"], byName["GET /{code}"]
	if post == nil || get == nil {
		t.Fatalf("no route-named request spans: %v", names(spans))
	}
	if post.Parent().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Error("the trusted caller's trace was not continued")
	}
	if get.Parent().IsValid() || len(get.Links()) != 1 {
		t.Error("the untrusted caller's traceparent was not turned into a link")
	}
	create := byName["store.Create"]
	if create == nil || create.Parent().SpanID() != post.SpanContext().SpanID() {
		t.Fatalf("store.Create is not a child of POST /shorten: %v", names(spans))
	}
	var getStore sdktrace.ReadOnlySpan
	for _, s := range spans {
		if strings.HasPrefix(s.Name(), "store.") && s.Parent().SpanID() == get.SpanContext().SpanID() {
			getStore = s
		}
	}
	if getStore == nil {
		t.Fatalf("no store span under GET /{code}: %v", names(spans))
	}
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			v := kv.Value.String()
			for _, secret := range []string{"private-target", "secret-query", "owner-claim-value"} {
				if strings.Contains(v, secret) {
					t.Errorf("span %s attribute %s = %q", s.Name(), kv.Key, v)
				}
			}
		}
	}
}

// TestTracedStoreKeepsErrors: the traced store returns the store's
// errors as they are, and a missing link is an answer, not a failed span.
func TestTracedStoreKeepsErrors(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	svc := newService(t, memstore.New(), shortener.Options{TracerProvider: tp})
	if _, err := svc.Resolve(t.Context(), "abcdefg"); !errors.Is(err, shortener.ErrNotFound) {
		t.Fatalf("Resolve: %v", err)
	}
	for _, s := range rec.Ended() {
		if s.Status().Code.String() == "Error" {
			t.Errorf("%s: status Error for a missing link", s.Name())
		}
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}
