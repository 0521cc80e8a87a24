package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// served is one `idp-proxy serve` started in-process with injected signals.
type served struct {
	proxy, ops string
	logs       *syncBuffer
	sigs       chan os.Signal
	done       chan struct{} // closed when serve returned, with err set
	err        error
}

func startServeSignals(t *testing.T, cfgPath string) *served {
	t.Helper()
	s := startServeUnready(t, cfgPath)
	waitReady(t, http.DefaultClient, s.ops+"/readyz")
	return s
}

// startServeUnready starts serve and returns once it listens, ready or not.
func startServeUnready(t *testing.T, cfgPath string) *served {
	t.Helper()
	s := &served{logs: &syncBuffer{}, sigs: make(chan os.Signal, 4), done: make(chan struct{})}
	addrs := make(chan [2]string, 1)
	d := deps{environ: nil, signals: s.sigs, ready: func(p, o string) { addrs <- [2]string{p, o} }}
	ctx, cancel := context.WithCancel(t.Context())
	cmd := newRootCmd(d)
	cmd.SetErr(s.logs)
	cmd.SetOut(io.Discard)
	cmd.SetArgs([]string{"serve", "-c", cfgPath})
	go func() {
		s.err = cmd.ExecuteContext(ctx)
		close(s.done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
		}
	})
	select {
	case a := <-addrs:
		s.proxy, s.ops = "http://"+a[0], "http://"+a[1]
	case <-s.done:
		t.Fatalf("serve ended: %v\n%s", s.err, s.logs.String())
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not start")
	}
	return s
}

func status(t *testing.T, method, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// SIGHUP re-reads the file: a changed rule applies to new requests, a
// request in flight finishes under the rules it started with, a broken
// file keeps the running rules and says why.
func TestReloadOnSIGHUP(t *testing.T) {
	idpSrv := idptest.NewServer(t)
	release := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(upstream.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	path := writeConfig(t, idpSrv, upstream.URL, "")
	write := func(routes string) {
		y := strings.Replace(mustRead(t, path), "routes:\n", "routes:\n"+routes, 1)
		if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	original := mustRead(t, path)
	write("  - {match: GET /slow, public: true}\n")
	s := startServeSignals(t, path)
	reader := idpSrv.Mint(idpSrv.UserClaims("shortener", "bob", "reader"))

	// A slow request under the first configuration.
	slow := make(chan int, 1)
	go func() {
		resp, err := http.Get(s.proxy + "/slow")
		if err != nil {
			slow <- 0
			return
		}
		resp.Body.Close()
		slow <- resp.StatusCode
	}()
	time.Sleep(100 * time.Millisecond)

	if got := status(t, "POST", s.proxy+"/shorten", reader); got != http.StatusForbidden {
		t.Fatalf("before the reload: %d, want 403 (creator needed)", got)
	}
	// New rules: /shorten for any valid token, /slow denied.
	if err := os.WriteFile(path, []byte(strings.Replace(original, "{match: POST /shorten, roles: [creator]}",
		"{match: POST /shorten}\n  - {match: GET /slow, roles: [nobody]}", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	s.sigs <- syscall.SIGHUP
	waitFor(t, "the reload", func() bool { return status(t, "POST", s.proxy+"/shorten", reader) == http.StatusOK })
	if got := status(t, "GET", s.proxy+"/slow", ""); got != http.StatusUnauthorized {
		t.Errorf("/slow after the reload: %d, want 401", got)
	}
	close(release)
	if got := <-slow; got != http.StatusOK {
		t.Errorf("the request in flight during the reload: %d, want 200 under the rules it started with", got)
	}

	// A broken file: the running rules stay, the failure is logged and counted.
	if err := os.WriteFile(path, []byte(original+"\nroutes_typo: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.sigs <- syscall.SIGHUP
	waitFor(t, "the failed reload", func() bool {
		return strings.Contains(metricsText(t, s.ops), `idp_proxy_config_reloads_total{result="failure"} 1`)
	})
	if got := status(t, "POST", s.proxy+"/shorten", reader); got != http.StatusOK {
		t.Errorf("after a failed reload: %d, want the running rules (200)", got)
	}
	m := metricsText(t, s.ops)
	if !strings.Contains(m, `idp_proxy_config_reloads_total{result="success"} 1`) {
		t.Errorf("success not counted:\n%s", m)
	}
	if logs := s.logs.String(); !strings.Contains(logs, "configuration reload failed") || !strings.Contains(logs, "routes_typo") {
		t.Errorf("the failed reload does not say why:\n%s", logs)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func metricsText(t *testing.T, ops string) string {
	t.Helper()
	resp, err := http.Get(ops + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// balancer routes to the instances whose /readyz answered 200 at its last
// poll, as a Kubernetes Service or a cloud load balancer does.
type balancer struct {
	mu      sync.Mutex
	targets []*served
	ready   map[*served]bool
	next    int
}

func (b *balancer) poll(stop <-chan struct{}, every time.Duration) {
	for {
		for _, s := range b.targets {
			ok := false
			if resp, err := http.Get(s.ops + "/readyz"); err == nil {
				ok = resp.StatusCode == http.StatusOK
				resp.Body.Close()
			}
			b.mu.Lock()
			b.ready[s] = ok
			b.mu.Unlock()
		}
		select {
		case <-stop:
			return
		case <-time.After(every):
		}
	}
}

func (b *balancer) pick() *served {
	b.mu.Lock()
	defer b.mu.Unlock()
	for range b.targets {
		s := b.targets[b.next%len(b.targets)]
		b.next++
		if b.ready[s] {
			return s
		}
	}
	return nil
}

// A rolling restart: two instances behind a load balancer that follows
// readiness; one gets SIGTERM under steady load. With the drain, not one
// request fails; without it (drain_delay 0) requests sent between the stop
// and the balancer's next poll find a closed listener.
func TestRollingRestartLosesNoRequest(t *testing.T) {
	idpSrv := idptest.NewServer(t)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(upstream.Close)
	for _, tc := range []struct {
		drain        string
		wantFailures bool
	}{{"500ms", false}, {"0s", true}} {
		t.Run("drain_delay "+tc.drain, func(t *testing.T) {
			cfg := writeConfig(t, idpSrv, upstream.URL, "server: {drain_delay: "+tc.drain+", shutdown_timeout: 5s}\n")
			a, b := startServeSignals(t, cfg), startServeSignals(t, cfg)
			lb := &balancer{targets: []*served{a, b}, ready: map[*served]bool{}}
			stopPoll := make(chan struct{})
			go lb.poll(stopPoll, 100*time.Millisecond)
			t.Cleanup(func() { close(stopPoll) })
			waitFor(t, "both instances ready", func() bool {
				lb.mu.Lock()
				defer lb.mu.Unlock()
				return lb.ready[a] && lb.ready[b]
			})

			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
			var sent, failed atomic.Int64
			var firstErr atomic.Value
			stopLoad := make(chan struct{})
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stopLoad:
							return
						default:
						}
						s := lb.pick()
						if s == nil {
							time.Sleep(time.Millisecond)
							continue
						}
						sent.Add(1)
						resp, err := client.Get(s.proxy + "/health")
						if err == nil {
							_, _ = io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
							if resp.StatusCode != http.StatusOK {
								err = fmt.Errorf("status %d", resp.StatusCode)
							}
						}
						if err != nil {
							failed.Add(1)
							firstErr.CompareAndSwap(nil, err.Error())
						}
						time.Sleep(2 * time.Millisecond) // steady, not a flood of sockets
					}
				}()
			}
			// Counted, not timed: on a loaded machine 300 ms may carry few
			// requests, and a restart under too light a load shows nothing.
			time.Sleep(300 * time.Millisecond)
			waitFor(t, "50 requests before the restart", func() bool { return sent.Load() >= 50 })
			a.sigs <- syscall.SIGTERM
			select {
			case <-a.done:
				if a.err != nil {
					t.Errorf("instance a stopped with %v", a.err)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("instance a did not stop")
			}
			stopped := sent.Load()
			time.Sleep(300 * time.Millisecond) // b carries on alone
			waitFor(t, "50 requests after the restart", func() bool { return sent.Load() >= stopped+50 })
			close(stopLoad)
			wg.Wait()
			t.Logf("drain_delay %s: %d requests, %d failed (first: %v)", tc.drain, sent.Load(), failed.Load(), firstErr.Load())
			if sent.Load() < 100 {
				t.Fatalf("only %d requests: the load is too light to show anything", sent.Load())
			}
			if got := failed.Load() > 0; got != tc.wantFailures {
				t.Errorf("failures: %d, want any: %v", failed.Load(), tc.wantFailures)
			}
		})
	}
}

// TestServeForwardAuthOnly: serve without an upstream, verdicts on a
// listener of their own; the main listener forwards nothing and refuses
// verdicts to untrusted sources.
func TestServeForwardAuthOnly(t *testing.T) {
	idpSrv := idptest.NewServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	faAddr := ln.Addr().String()
	ln.Close()
	cfg := writeConfig(t, idpSrv, "", fmt.Sprintf("forward_auth: {enabled: true, listen: %q}\n", faAddr))
	proxyAddr, _, _, _ := startServe(t, nil, "-c", cfg)
	tok := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	verify := func(base, uri, method, token string) *http.Response {
		t.Helper()
		var resp *http.Response
		deadline := time.Now().Add(10 * time.Second)
		for {
			r, _ := http.NewRequest(http.MethodGet, "http://"+base+"/auth/verify", nil)
			r.Header.Set("X-Original-URI", uri)
			r.Header.Set("X-Original-Method", method)
			if token != "" {
				r.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err = http.DefaultClient.Do(r)
			if err == nil && resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := verify(faAddr, "/health", "GET", ""); resp.StatusCode != 200 {
		t.Fatalf("public route: %d", resp.StatusCode)
	}
	if resp := verify(faAddr, "/shorten", "POST", ""); resp.StatusCode != 401 {
		t.Fatalf("protected, no token: %d", resp.StatusCode)
	}
	resp := verify(faAddr, "/shorten", "POST", tok)
	if resp.StatusCode != 200 || resp.Header.Get("X-Auth-Request-User") != "user-alice" {
		t.Fatalf("protected, token: %d %q", resp.StatusCode, resp.Header.Get("X-Auth-Request-User"))
	}
	if resp := verify(proxyAddr, "/health", "GET", ""); resp.StatusCode != 403 {
		t.Fatalf("verdict on the main listener without trusted_cidrs: %d, want 403", resp.StatusCode)
	}
	plain, err := http.Get("http://" + proxyAddr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	plain.Body.Close()
	if plain.StatusCode != 404 {
		t.Fatalf("forward-auth only, a plain request: %d, want 404", plain.StatusCode)
	}
}

// TestServePprof: the profiler is on the operations listener only when
// asked for, and never on the public one.
func TestServePprof(t *testing.T) {
	idpSrv := idptest.NewServer(t)
	for _, on := range []bool{false, true} {
		cfg := writeConfig(t, idpSrv, "http://127.0.0.1:1", fmt.Sprintf("pprof: %v\n", on))
		proxyAddr, opsAddr, _, _ := startServe(t, nil, "-c", cfg)
		resp, err := http.Get("http://" + opsAddr + "/debug/pprof/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if (resp.StatusCode == 200) != on {
			t.Errorf("pprof: %v: ops listener answers /debug/pprof/ with %d", on, resp.StatusCode)
		}
		resp, err = http.Get("http://" + proxyAddr + "/debug/pprof/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Errorf("pprof: %v: the public listener serves the profiler", on)
		}
	}
}
