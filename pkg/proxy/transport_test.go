package proxy

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/problem"
)

func TestUpstreamPathPrefix(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	_, px := startProxy(t, testConfig(idpSrv, up.URL+"/base"), Options{}, true)
	if resp, _ := do(t, "GET", px.URL+"/health?q=1", "", nil, ""); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := up.last(t).RequestURI; got != "/base/health?q=1" {
		t.Errorf("upstream got %q", got)
	}
}

func TestUpgrades(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	_, px := startProxy(t, testConfig(idpSrv, up.URL), Options{}, true)
	resp, _ := do(t, "GET", px.URL+"/health", "", map[string]string{"Connection": "Upgrade, HTTP2-Settings", "Upgrade": "h2c", "HTTP2-Settings": "AAMAAABkAARAAAAAAAIAAAAA"}, "")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	got := up.last(t).Header
	if got.Get("Upgrade") != "" || got.Get("Connection") != "" || got.Get("Http2-Settings") != "" {
		t.Errorf("h2c upgrade forwarded: %v", got)
	}
	resp, _ = do(t, "GET", px.URL+"/health", "", map[string]string{"Connection": "Upgrade", "Upgrade": "websocket"}, "")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := up.last(t).Header; !strings.EqualFold(got.Get("Upgrade"), "websocket") {
		t.Errorf("websocket upgrade not forwarded: %v", got)
	}
}

func TestUpstreamFailures(t *testing.T) {
	idpSrv := newProvider(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	_ = ln.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	for _, tc := range []struct {
		name, url string
		want      int
	}{{"down", dead, 502}, {"timeout", slow.URL, 504}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(idpSrv, tc.url)
			cfg.Upstream.Timeout = 100 * time.Millisecond
			_, px := startProxy(t, cfg, Options{}, false)
			resp, body := do(t, "GET", px.URL+"/health", "", nil, "")
			if resp.StatusCode != tc.want || resp.Header.Get("Content-Type") != problem.ContentType {
				t.Fatalf("status %d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
		})
	}
}
