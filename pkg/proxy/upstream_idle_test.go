package proxy

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/keepalivetest"
)

// A POST is forwarded on a fresh connection, not on one the upstream is
// closing: this upstream, like a Node.js one caught at its 5 s keep-alive
// timeout, resets a connection idle for 4.5 s when the next request
// arrives on it. Go's transport does not retry a POST there, so a proxy
// keeping idle connections longer (Go's default is 90 s) answers 502.
func TestUpstreamIdleConnectionsDropped(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 4.6 s")
	}
	t.Parallel()
	const upstreamIdle = 4500 * time.Millisecond
	up := keepalivetest.NewServer(upstreamIdle, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
	}))
	defer up.Close()

	idpSrv := newProvider(t)
	cfg := testConfig(idpSrv, up.URL)
	if cfg.Upstream.IdleTimeout >= upstreamIdle {
		t.Fatalf("default upstream.idle_timeout %v is not below this upstream's %v", cfg.Upstream.IdleTimeout, upstreamIdle)
	}
	_, px := startProxy(t, cfg, Options{}, true)
	token := "Bearer " + idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	post := func() int {
		req, _ := http.NewRequest("POST", px.URL+"/shorten", strings.NewReader(`{"url":"https://example.com/"}`))
		req.Header.Set("Authorization", token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	if code := post(); code != http.StatusCreated {
		t.Fatalf("first POST: %d", code)
	}
	time.Sleep(upstreamIdle + 100*time.Millisecond)
	if code := post(); code != http.StatusCreated {
		t.Fatalf("POST after %v idle: %d (forwarded on a connection the upstream was closing)", upstreamIdle, code)
	}
}
