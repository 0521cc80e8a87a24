package otlpexport_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/testsupport"
	"github.com/idp-proxy/idp-proxy/internal/tracing/otlpexport"
	"github.com/idp-proxy/idp-proxy/internal/tracing/otlptest"
)

// setup is otlptest.Provider.
var setup = otlptest.Provider

func TestShutdownFlushes(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		recv     func(testing.TB) (*otlptest.Receiver, string)
	}{
		{otlpexport.ProtocolHTTP, func(t testing.TB) (*otlptest.Receiver, string) {
			h := otlptest.NewHTTP(t)
			return h.Receiver, h.Endpoint()
		}},
		{otlpexport.ProtocolGRPC, func(t testing.TB) (*otlptest.Receiver, string) {
			g := otlptest.NewGRPC(t)
			return g.Receiver, g.Endpoint()
		}},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			rc, endpoint := tc.recv(t)
			p := setup(t, tc.protocol, endpoint)
			_, span := p.TracerProvider().Tracer("test").Start(t.Context(), "one")
			span.End()
			// The batcher's delay is 5 s: only the shutdown's flush can have
			// sent the span by now.
			if err := p.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			spans := rc.Spans()
			if len(spans) != 1 || spans[0].Name != "one" || spans[0].Service != "svc-test" {
				t.Fatalf("received:\n%s", otlptest.Dump(spans))
			}
		})
	}
}

func TestServiceNameFromEnv(t *testing.T) {
	h := otlptest.NewHTTP(t)
	p := setup(t, otlpexport.ProtocolHTTP, h.Endpoint())
	_ = p.Shutdown(context.Background())
	t.Setenv("OTEL_SERVICE_NAME", "renamed")
	p, err := otlpexport.Setup(t.Context(), otlpexport.Options{ServiceName: "svc-test"})
	if err != nil {
		t.Fatal(err)
	}
	_, span := p.TracerProvider().Tracer("test").Start(t.Context(), "one")
	span.End()
	_ = p.Shutdown(context.Background())
	if s := h.Spans(); len(s) != 1 || s[0].Service != "renamed" {
		t.Fatalf("received:\n%s", otlptest.Dump(s))
	}
}

func TestSetupRefusesUnknownSettings(t *testing.T) {
	for _, tc := range []struct{ key, value, want string }{
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "thrift", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		{"OTEL_TRACES_SAMPLER", "sometimes", "OTEL_TRACES_SAMPLER"},
		{"OTEL_TRACES_SAMPLER_ARG", "1.5", "OTEL_TRACES_SAMPLER_ARG"},
	} {
		env := map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", tc.key: tc.value}
		_, err := otlpexport.Setup(t.Context(), otlpexport.Options{ServiceName: "x", Getenv: func(k string) string { return env[k] }})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: error %v, want one naming %s", tc.key, tc.value, err, tc.want)
		}
	}
}

// A failed export is a record of the program's structured log (level
// WARN, the collector's answer in "error"), not a line on stderr.
func TestExportErrorIsLogged(t *testing.T) {
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such tenant", http.StatusBadRequest) // not retried
	}))
	t.Cleanup(collector.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", otlpexport.ProtocolHTTP)
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	var buf syncBuffer
	p, err := otlpexport.Setup(t.Context(), otlpexport.Options{ServiceName: "svc-test",
		Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	_, span := p.TracerProvider().Tracer("test").Start(t.Context(), "one")
	span.End()
	_ = p.Shutdown(context.Background())
	var found bool
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if e, _ := rec["error"].(string); rec["level"] == "WARN" && strings.Contains(e, "400") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no WARN record with the collector's 400 in the log:\n%s", buf.String())
	}
}

// The SDK's own logger logs through the same logger: the provider's
// creation, an information of the SDK, is an INFO record.
func TestSDKLoggerIsRouted(t *testing.T) {
	var buf syncBuffer
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	if _, err := otlpexport.Setup(t.Context(), otlpexport.Options{ServiceName: "svc-test",
		Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, `"level":"INFO","msg":"TracerProvider created"`) {
		t.Fatalf("log:\n%s", out)
	}
}

// With a collector that accepts connections and never answers, Shutdown
// returns within Options.FlushTimeout, whatever the export's own timeout
// (30 s here). Before, the programs waited 5 s on it.
func TestShutdownBoundedWithHangingCollector(t *testing.T) {
	for _, protocol := range []string{otlpexport.ProtocolHTTP, otlpexport.ProtocolGRPC} {
		t.Run(protocol, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ln.Close() })
			var held []net.Conn
			var mu sync.Mutex
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					mu.Lock()
					held = append(held, c) // never read, never answered
					mu.Unlock()
				}
			}()
			t.Cleanup(func() {
				mu.Lock()
				defer mu.Unlock()
				for _, c := range held {
					_ = c.Close()
				}
			})
			t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "30000")
			p := setup(t, protocol, "http://"+ln.Addr().String())
			_, span := p.TracerProvider().Tracer("test").Start(t.Context(), "one")
			span.End()
			start := time.Now()
			err = p.Shutdown(context.Background())
			took := time.Since(start)
			if took > otlpexport.DefaultFlushTimeout+2*time.Second {
				t.Fatalf("Shutdown took %s with a hanging collector, bound %s", took, otlpexport.DefaultFlushTimeout)
			}
			if err == nil {
				t.Error("Shutdown reported no error though the spans were not exported")
			}
		})
	}
}

// syncBuffer is the shared log sink safe for concurrent writers.
type syncBuffer = testsupport.SyncBuffer
