package proxy

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/internal/testsupport"
)

func TestOpsEndpointsAndAccessLog(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	var logBuf syncBuffer
	accessLog := slog.New(slog.NewJSONHandler(&logBuf, nil))
	p, px := startProxy(t, testConfig(idpSrv, up.URL), Options{AccessLog: accessLog}, true)
	ops := httptest.NewServer(p.OpsHandler())
	t.Cleanup(ops.Close)
	alice := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	do(t, "POST", px.URL+"/shorten?secret=query", alice, nil, "")
	do(t, "POST", px.URL+"/shorten", "", nil, "")
	do(t, "GET", px.URL+"/a/../b", "", nil, "")

	if resp, body := do(t, "GET", ops.URL+"/healthz", "", nil, ""); resp.StatusCode != 200 || !strings.Contains(body, "ok") {
		t.Errorf("healthz: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, "GET", ops.URL+"/readyz", "", nil, ""); resp.StatusCode != 200 || !strings.Contains(body, `"upstream_reachable":true`) {
		t.Errorf("readyz: %d %s", resp.StatusCode, body)
	}
	_, metrics := do(t, "GET", ops.URL+"/metrics", "", nil, "")
	for _, want := range []string{
		`idp_proxy_requests_total{decision="allowed",rule="POST /shorten"} 1`,
		`idp_proxy_requests_total{decision="no_token",rule="POST /shorten"} 1`,
		`idp_proxy_requests_total{decision="bad_request",rule="(invalid)"} 1`,
		`idp_proxy_token_verification_duration_seconds_count`,
		`idp_proxy_upstream_duration_seconds_count{outcome="ok"} 1`,
		`idp_proxy_jwks_refreshes_total 1`,
		`idp_proxy_jwks_ready 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if resp, _ := do(t, "GET", ops.URL+"/nope", "", nil, ""); resp.StatusCode != 404 {
		t.Errorf("unknown ops path: %d", resp.StatusCode)
	}

	logs := logBuf.String()
	if strings.Contains(logs, alice) || strings.Contains(logs, "secret=query") {
		t.Fatal("the access log holds a token or a query string")
	}
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d access log lines, want 3:\n%s", len(lines), logs)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"method": "POST", "path": "/shorten", "status": float64(200), "rule": "POST /shorten", "decision": "allowed", "user": "user-alice"} {
		if rec[k] != want {
			t.Errorf("log %s = %v, want %v", k, rec[k], want)
		}
	}
	if id, _ := rec["request_id"].(string); id == "" {
		t.Error("log without request_id")
	}
}

// syncBuffer is the shared log sink safe for concurrent writers.
type syncBuffer = testsupport.SyncBuffer

// What operators expect: requests by status code and method, a duration
// histogram of whole requests, reload counters, and oauth2-proxy's probe
// names; one Metrics shared by successive proxies keeps counting.
func TestOperatorMetricsAndProbeAliases(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	m := NewMetrics()
	p, px := startProxy(t, testConfig(idpSrv, up.URL), Options{Metrics: m}, true)
	ops := httptest.NewServer(p.OpsHandler())
	t.Cleanup(ops.Close)
	alice := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	do(t, "POST", px.URL+"/shorten", alice, nil, "")
	do(t, "POST", px.URL+"/shorten", "", nil, "")
	do(t, "GET", px.URL+"/health", "", nil, "")
	do(t, "BREW", px.URL+"/health", "", nil, "")
	// A second proxy (a reload) with the same Metrics.
	_, px2 := startProxy(t, testConfig(idpSrv, up.URL), Options{Metrics: m}, true)
	do(t, "GET", px2.URL+"/health", "", nil, "")
	m.RecordReload(true)
	m.RecordReload(false)

	for _, path := range []string{"/ping", "/healthz", "/ready", "/readyz"} {
		if resp, body := do(t, "GET", ops.URL+path, "", nil, ""); resp.StatusCode != 200 {
			t.Errorf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
	_, metrics := do(t, "GET", ops.URL+"/metrics", "", nil, "")
	for _, want := range []string{
		`idp_proxy_http_requests_total{code="200",method="POST"} 1`,
		`idp_proxy_http_requests_total{code="401",method="POST"} 1`,
		`idp_proxy_http_requests_total{code="200",method="GET"} 2`,
		`idp_proxy_http_requests_total{code="401",method="other"} 1`,
		`idp_proxy_http_request_duration_seconds_count 5`,
		`idp_proxy_config_reloads_total{result="success"} 1`,
		`idp_proxy_config_reloads_total{result="failure"} 1`,
		`idp_proxy_config_last_reload_success_timestamp_seconds`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
