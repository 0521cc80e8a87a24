package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/tracing/otlptest"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// otelEnv points the OTEL_* variables at endpoint, sampling everything.
func otelEnv(t *testing.T, protocol, endpoint string) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
	t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
	t.Setenv("OTEL_TRACES_SAMPLER_ARG", "1.0")
	t.Setenv("OTEL_SERVICE_NAME", "")
}

// TestServeTracing: with tracing.enabled, serve exports its spans to the
// OTLP receiver the OTEL_* variables name (over http/protobuf and grpc),
// sends its trace context upstream, continues a trusted caller's trace,
// and flushes the last spans when it stops on SIGTERM.
func TestServeTracing(t *testing.T) {
	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Run(protocol, func(t *testing.T) {
			var rc *otlptest.Receiver
			if protocol == "grpc" {
				g := otlptest.NewGRPC(t)
				rc = g.Receiver
				otelEnv(t, protocol, g.Endpoint())
			} else {
				h := otlptest.NewHTTP(t)
				rc = h.Receiver
				otelEnv(t, protocol, h.Endpoint())
			}
			idpSrv := idptest.NewServer(t)
			var mu sync.Mutex
			var parents []string
			upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodHead {
					return // /readyz asking whether the upstream answers
				}
				mu.Lock()
				parents = append(parents, r.Header.Get("Traceparent"))
				mu.Unlock()
			}))
			t.Cleanup(upstream.Close)
			path := writeConfig(t, idpSrv, upstream.URL, "tracing: {enabled: true, trusted_cidrs: [127.0.0.1/32]}\nserver: {drain_delay: 1ms}\n")
			s := startServeSignals(t, path)
			tok := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
			const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
			req, _ := http.NewRequest("POST", s.proxy+"/shorten?token="+tok, strings.NewReader("{}"))
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Traceparent", caller)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			// The batcher waits 5 s: the spans arrive with the flush at stop.
			s.sigs <- syscall.SIGTERM
			select {
			case <-s.done:
			case <-time.After(20 * time.Second):
				t.Fatal("serve did not stop")
			}
			spans := rc.Spans()
			byName := map[string]otlptest.Span{}
			for _, sp := range spans {
				if sp.Service != "idp-proxy" {
					t.Errorf("span %s of service %q", sp.Name, sp.Service)
				}
				byName[sp.Name] = sp
			}
			req0, az, up := byName["POST"], byName["proxy.authorize"], byName["proxy.upstream"]
			if req0.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || req0.ParentID != "00f067aa0ba902b7" {
				t.Fatalf("the request span does not continue the trusted caller's trace:\n%s", otlptest.Dump(spans))
			}
			if az.ParentID != req0.SpanID || az.Attrs["proxy.rule"] != "POST /shorten" || az.Attrs["proxy.decision"] != "allowed" ||
				az.Attrs["idp.cache"] != "miss" || az.Attrs["idp.issuer"] != idpSrv.Issuer {
				t.Fatalf("proxy.authorize:\n%s", otlptest.Dump(spans))
			}
			if len(otlptest.Named(spans, "idp.jwks.fetch")) == 0 {
				t.Errorf("no idp.jwks.fetch span:\n%s", otlptest.Dump(spans))
			}
			mu.Lock()
			defer mu.Unlock()
			if len(parents) != 1 || parents[0] != "00-"+up.TraceID+"-"+up.SpanID+"-01" {
				t.Fatalf("upstream traceparent %v, want the proxy.upstream span's\n%s", parents, otlptest.Dump(spans))
			}
			if d := otlptest.Dump(spans); strings.Contains(d, tok) || strings.Contains(d, "token=") {
				t.Fatalf("a span carries the token or the query:\n%s", d)
			}
		})
	}
}

// TestServeTracingBadEnvironment: an OTLP protocol the exporter does not
// speak stops serve at start, naming the variable.
func TestServeTracingBadEnvironment(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	idpSrv := idptest.NewServer(t)
	path := writeConfig(t, idpSrv, "http://127.0.0.1:8000", "tracing: {enabled: true}\n")
	_, _, err := run(t, deps{}, "serve", "-c", path)
	if err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_PROTOCOL") {
		t.Fatalf("serve: %v, want an error naming OTEL_EXPORTER_OTLP_PROTOCOL", err)
	}
}
