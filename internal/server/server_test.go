package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"
)

func TestRunServesAndShutsDownGracefully(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		_, _ = io.WriteString(w, "done")
	})
	ctx, cancel := context.WithCancel(t.Context())
	runErr := make(chan error, 1)
	go func() {
		runErr <- Run(ctx, Options{ShutdownTimeout: 5 * time.Second}, Listener{Name: "t", Listener: ln, Handler: h})
	}()

	respc := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			respc <- "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		respc <- string(b)
	}()
	<-started
	cancel() // shutdown begins while the request is in flight
	time.AfterFunc(50*time.Millisecond, func() { close(release) })
	if got := <-respc; got != "done" {
		t.Fatalf("in-flight request got %q, want it to finish", got)
	}
	if err := <-runErr; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestNewAppliesDefaults(t *testing.T) {
	srv := New(http.NotFoundHandler(), Options{})
	if srv.ReadHeaderTimeout != 5*time.Second || srv.MaxHeaderBytes != 32<<10 || srv.IdleTimeout == 0 {
		t.Fatalf("defaults not applied: %+v", srv)
	}
}

// A keep-alive client that ignores readiness keeps sending on its open
// connection during the drain. Each answer from the start of the drain
// says "Connection: close", so the client's next request goes on a new
// connection (refused once the listener closes) and never on one that the
// shutdown closes under it.
func TestDrainEndsKeepAlive(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "ok")
	})
	drained := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	runErr := make(chan error, 1)
	go func() {
		runErr <- Run(ctx, Options{
			ShutdownTimeout: 5 * time.Second,
			DrainDelay:      time.Second,
			OnDrain:         func() { close(drained) },
		}, Listener{Name: "t", Listener: ln, Handler: h})
	}()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	post := func() (resp *http.Response, reused bool) {
		t.Helper()
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace),
			"POST", "http://"+ln.Addr().String()+"/", strings.NewReader("x"))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("POST: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp, reused
	}
	if resp, _ := post(); resp.Close {
		t.Fatal("before the drain: Connection: close")
	}
	cancel()
	<-drained
	resp, reused := post()
	if !reused {
		t.Fatal("the request during the drain did not reuse the idle connection")
	}
	if !resp.Close { // the transport removes "Connection: close" and sets Close
		t.Fatal("the answer during the drain kept the connection alive")
	}
	if _, reused := post(); reused {
		t.Fatal("a connection was kept alive during the drain")
	}
	if err := <-runErr; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
