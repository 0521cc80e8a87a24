package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/testsupport"
	"github.com/idp-proxy/idp-proxy/internal/tracing/otlptest"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// TestTraceAcrossBinaries runs the real idp-proxy and shortener binaries,
// both with tracing on and exporting to one OTLP/HTTP receiver that
// decodes what they send, the shortener trusting the proxy's traceparent:
// a request through the proxy is one trace, from the proxy's request span
// to the shortener's store call; both flush their spans when stopped
// with SIGTERM.
func TestTraceAcrossBinaries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs both binaries")
	}
	t0 := time.Now()
	rc := otlptest.NewHTTP(t)
	idpSrv := idptest.NewServer(t)
	dir := t.TempDir()
	// Both binaries in one go build: compiled and linked in parallel.
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	if raceEnabled {
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, ".", "../idp-proxy")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built in %v", time.Since(t0))
	shortBin, proxyBin := filepath.Join(dir, "shortener"), filepath.Join(dir, "idp-proxy")
	env := append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+rc.Endpoint(), "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_TRACES_SAMPLER=parentbased_always_on", "OTEL_SERVICE_NAME=", "OTEL_RESOURCE_ATTRIBUTES=")

	short := startTraced(t, env, "api", shortBin, "--listen", "127.0.0.1:0", "--store", "memory:", "--log-format", "json",
		"--metrics-listen", "off", "--drain-delay", "0s", "--trust-identity-headers",
		"--tracing", "--trace-parent-from", "127.0.0.1")
	cfg := filepath.Join(dir, "proxy.yaml")
	y := fmt.Sprintf(`listen: 127.0.0.1:0
metrics_listen: ""
upstream: {url: %q}
idp: {server_url: %q, realm: %s, client_id: shortener}
routes:
  - {match: POST /shorten, roles: [creator]}
server: {drain_delay: 1ms}
log: {format: json, level: info}
tracing: {enabled: true}
`, short.Base, idpSrv.URL, idpSrv.Realm)
	if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	proxy := startTraced(t, env, "proxy", proxyBin, "serve", "--config", cfg)

	tok := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	var resp *http.Response
	for deadline := time.Now().Add(15 * time.Second); ; { // until the proxy has the provider's keys
		req, _ := http.NewRequest("POST", proxy.Base+"/shorten", strings.NewReader(`{"url":"https://example.com/private-target"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
		if r.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
			resp = r
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /shorten through the proxy: %d\nproxy:\n%s\nshortener:\n%s", resp.StatusCode, proxy.Logs(), short.Logs())
	}
	t.Logf("answered after %v", time.Since(t0))
	proxy.Signal(t, syscall.SIGTERM, 20*time.Second)
	short.Signal(t, syscall.SIGTERM, 20*time.Second)
	t.Logf("stopped after %v", time.Since(t0))

	spans := rc.Spans()
	find := func(service, name string) otlptest.Span {
		for _, s := range spans {
			if s.Service == service && s.Name == name && (name != "POST" || s.Attrs["http.response.status_code"] == "201") {
				return s
			}
		}
		t.Fatalf("no %s span %q:\n%s", service, name, otlptest.Dump(spans))
		return otlptest.Span{}
	}
	preq, pup := find("idp-proxy", "POST"), find("idp-proxy", "proxy.upstream")
	sreq, screate := find("shortener", "POST /shorten"), find("shortener", "store.Create")
	if pup.TraceID != preq.TraceID || sreq.TraceID != preq.TraceID || screate.TraceID != preq.TraceID ||
		pup.ParentID != preq.SpanID || sreq.ParentID != pup.SpanID || screate.ParentID != sreq.SpanID {
		t.Fatalf("not one trace proxy → upstream → shortener → store:\n%s", otlptest.Dump(spans))
	}
	if d := otlptest.Dump(spans); strings.Contains(d, tok) || strings.Contains(d, "private-target") || strings.Contains(d, "user-alice") {
		t.Fatalf("a span carries the token, the URL or the subject:\n%s", d)
	}
}

// startTraced runs bin with env and waits for its "listening" log line
// for the listener named server.
func startTraced(t *testing.T, env []string, server, bin string, args ...string) *testsupport.Process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	return testsupport.StartProcess(t, cmd, server)
}
