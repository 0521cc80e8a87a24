package otlpexport_test

import (
	"context"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/internal/tracing/otlpexport"
	"github.com/idp-proxy/idp-proxy/internal/tracing/otlptest"
)

// setup points the OTEL_* variables at endpoint and returns the provider.
func setup(t *testing.T, protocol, endpoint string) *otlpexport.Provider {
	t.Helper()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	t.Setenv("OTEL_SERVICE_NAME", "")
	p, err := otlpexport.Setup(context.Background(), otlpexport.Options{ServiceName: "svc-test"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Protocol() != protocol {
		t.Fatalf("protocol %q, want %q", p.Protocol(), protocol)
	}
	return p
}

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
			_, span := p.TracerProvider().Tracer("test").Start(context.Background(), "one")
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
	p, err := otlpexport.Setup(context.Background(), otlpexport.Options{ServiceName: "svc-test"})
	if err != nil {
		t.Fatal(err)
	}
	_, span := p.TracerProvider().Tracer("test").Start(context.Background(), "one")
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
		_, err := otlpexport.Setup(context.Background(), otlpexport.Options{ServiceName: "x", Getenv: func(k string) string { return env[k] }})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: error %v, want one naming %s", tc.key, tc.value, err, tc.want)
		}
	}
}
