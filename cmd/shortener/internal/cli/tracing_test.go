package cli

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/internal/tracing"
	"github.com/idp-proxy/idp-proxy/internal/tracing/otlptest"
)

func TestTracingFlags(t *testing.T) {
	cfg, err := capture(t, "--tracing", "--trace-parent-from", "10.0.0.0/8,127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Tracing || len(cfg.TraceParentFrom) != 2 || cfg.TraceParentFrom[1].String() != "127.0.0.1/32" {
		t.Fatalf("config = %+v", cfg)
	}
	if _, err := capture(t, "--trace-parent-from", "10.0.0.0/40"); err == nil || !strings.Contains(err.Error(), "trace-parent-from") {
		t.Fatalf("a bad prefix: %v", err)
	}
	t.Setenv("SHORTENER_TRACING", "yes please")
	if _, err := capture(t); err == nil || !strings.Contains(err.Error(), "tracing") {
		t.Fatalf("a bad SHORTENER_TRACING: %v", err)
	}
}

// TestRunTracing: with --tracing the shortener exports, to the receiver
// the OTEL_* variables name, a span per request named after its route
// with the store calls under it; a trusted caller's trace is continued;
// stopping flushes the spans (the batcher's delay is 5 s).
func TestRunTracing(t *testing.T) {
	rc := otlptest.NewHTTP(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.Endpoint())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	t.Setenv("OTEL_SERVICE_NAME", "")
	cfg := baseConfig("memory:")
	cfg.Tracing = true
	cfg.TraceParentFrom, _ = tracing.ParsePrefixes([]string{"127.0.0.1"})
	base, stop, logs := startRun(t, cfg)
	const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	req, _ := http.NewRequest("POST", base+"/shorten?q=secret-query", strings.NewReader(`{"url":"https://example.com/private-target"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Traceparent", caller)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		ShortCode string `json:"short_code"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("POST /shorten: %d", resp.StatusCode)
	}
	if err := stop(); err != nil {
		t.Fatalf("run: %v\n%s", err, logs)
	}
	spans := rc.Spans()
	var post, create otlptest.Span
	for _, s := range spans {
		if s.Service != "shortener" {
			t.Errorf("span %s of service %q", s.Name, s.Service)
		}
		switch s.Name {
		case "POST /shorten":
			post = s
		case "store.Create":
			create = s
		}
	}
	if post.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || post.ParentID != "00f067aa0ba902b7" {
		t.Fatalf("POST /shorten does not continue the caller's trace:\n%s", otlptest.Dump(spans))
	}
	if create.ParentID != post.SpanID || post.Attrs["http.response.status_code"] != "201" {
		t.Fatalf("store.Create is not under POST /shorten:\n%s", otlptest.Dump(spans))
	}
	if d := otlptest.Dump(spans); strings.Contains(d, "secret-query") || strings.Contains(d, "private-target") {
		t.Fatalf("a span carries the query or the URL:\n%s", d)
	}
}
