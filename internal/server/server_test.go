package server

import (
	"context"
	"io"
	"net"
	"net/http"
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
	ctx, cancel := context.WithCancel(context.Background())
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
