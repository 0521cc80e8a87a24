package proxy

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// closedWithin reports whether p's plugin, whose provider is down (never
// ready), is closed within d: WaitReady then fails at once, without
// waiting for its context.
func closedWithin(t *testing.T, p *Proxy, d time.Duration) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	err := p.Plugin().WaitReady(ctx)
	if err == nil {
		t.Fatal("the plugin of a provider that is down became ready")
	}
	return !errors.Is(err, context.DeadlineExceeded)
}

func TestReloadableSwap(t *testing.T) {
	down := newProvider(t)
	down.SetDown(true)
	arrived, release := make(chan struct{}), make(chan struct{})
	oldUp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hold") != "" {
			arrived <- struct{}{}
			<-release
		}
		w.Header().Set("X-Upstream", "old")
	}))
	t.Cleanup(oldUp.Close)
	newUp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Upstream", "new")
	}))
	t.Cleanup(newUp.Close)

	oldPx, err := newProxy(t, testConfig(down, oldUp.URL), Options{})
	if err != nil {
		t.Fatal(err)
	}
	rl := NewReloadable(oldPx)
	srv := httptest.NewServer(rl)
	t.Cleanup(srv.Close)

	// A request in flight on the old proxy ...
	held := make(chan string)
	go func() {
		resp, _ := do(t, "GET", srv.URL+"/health", "", map[string]string{"X-Hold": "1"}, "")
		held <- resp.Header.Get("X-Upstream")
	}()
	<-arrived
	newPx, err := newProxy(t, testConfig(newProvider(t), newUp.URL), Options{})
	if err != nil {
		t.Fatal(err)
	}
	rl.Swap(newPx, 10*time.Second)
	if rl.Current() != newPx {
		t.Fatal("Current is not the swapped-in proxy")
	}
	// ... while new requests go to the new one ...
	if resp, _ := do(t, "GET", srv.URL+"/health", "", nil, ""); resp.Header.Get("X-Upstream") != "new" {
		t.Errorf("a request after the swap went to %q", resp.Header.Get("X-Upstream"))
	}
	// ... keeps the old plugin open until it is done.
	if closedWithin(t, oldPx, 200*time.Millisecond) {
		t.Fatal("the old plugin was closed with a request in flight")
	}
	close(release)
	if got := <-held; got != "old" {
		t.Errorf("the request in flight was served by %q", got)
	}
	if !closedWithin(t, oldPx, 5*time.Second) {
		t.Error("the old plugin was not closed after its requests")
	}
}

func TestReloadableSwapKeepsASharedPlugin(t *testing.T) {
	down := newProvider(t)
	down.SetDown(true)
	up := newUpstream(t)
	first, err := newProxy(t, testConfig(down, up.URL), Options{})
	if err != nil {
		t.Fatal(err)
	}
	rl := NewReloadable(first)
	second, err := New(first.Plugin(), testConfig(down, up.URL).Config, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rl.Swap(second, time.Second)
	time.Sleep(100 * time.Millisecond) // retire would have closed it by now
	if closedWithin(t, second, 200*time.Millisecond) {
		t.Error("Swap closed the plugin the new proxy shares")
	}
}

func TestReloadableOpsHandler(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	p, _ := startProxy(t, testConfig(idpSrv, up.URL), Options{}, true)
	rl := NewReloadable(p)
	extra := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("extra")) })
	ops := httptest.NewServer(rl.OpsHandler(OpsOptions{Extra: map[string]http.Handler{"/debug/x/": extra}}))
	t.Cleanup(ops.Close)
	for _, path := range []string{"/healthz", "/ping", "/readyz", "/ready", "/metrics"} {
		if resp, body := do(t, "GET", ops.URL+path, "", nil, ""); resp.StatusCode != 200 {
			t.Errorf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
	if _, body := do(t, "GET", ops.URL+"/debug/x/y", "", nil, ""); body != "extra" {
		t.Errorf("extra endpoint: %q", body)
	}
	if resp, _ := do(t, "GET", ops.URL+"/nope", "", nil, ""); resp.StatusCode != 404 {
		t.Errorf("unknown ops path: %d", resp.StatusCode)
	}
	rl.Drain()
	for _, path := range []string{"/readyz", "/ready"} {
		if resp, body := do(t, "GET", ops.URL+path, "", nil, ""); resp.StatusCode != 503 || !strings.Contains(body, `"draining"`) {
			t.Errorf("%s while draining: %d %s", path, resp.StatusCode, body)
		}
	}
	if resp, _ := do(t, "GET", ops.URL+"/healthz", "", nil, ""); resp.StatusCode != 200 {
		t.Errorf("healthz while draining: %d", resp.StatusCode)
	}
}
