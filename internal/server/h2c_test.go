package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
)

// TestH2C: with Options.H2C a plain listener serves HTTP/2 with prior
// knowledge (as gRPC clients send it) and still HTTP/1.1; without it,
// HTTP/1.1 only.
func TestH2C(t *testing.T) {
	for _, h2c := range []bool{true, false} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		runErr := make(chan error, 1)
		go func() {
			runErr <- Run(ctx, Options{H2C: h2c}, Listener{Name: "t", Listener: ln,
				Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, r.Proto) })})
		}()
		for _, c := range []struct {
			h2   bool
			want string
		}{{false, "HTTP/1.1"}, {true, "HTTP/2.0"}} {
			var p http.Protocols
			p.SetHTTP1(!c.h2)
			p.SetUnencryptedHTTP2(c.h2)
			client := &http.Client{Transport: &http.Transport{Protocols: &p}}
			resp, err := client.Get("http://" + ln.Addr().String() + "/")
			ok := err == nil
			if ok {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				ok = string(b) == c.want
			}
			if want := !c.h2 || h2c; ok != want {
				t.Errorf("h2c %v, %s client: err %v, served %v, want %v", h2c, c.want, err, ok, want)
			}
			client.CloseIdleConnections()
		}
		cancel()
		if err := <-runErr; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// TestProblemConnLeavesHTTP2Alone: the raw-error rewriting never touches
// an HTTP/2 connection's bytes, even a write that looks like one of
// net/http's HTTP/1 errors (a message's bytes, split there by buffering).
func TestProblemConnLeavesHTTP2Alone(t *testing.T) {
	raw := "HTTP/1.1 400 Bad Request" + rawErrorHeaders + "400 Bad Request"
	for _, c := range []struct {
		first   string
		rewrite bool
	}{{h2Preface, false}, {h2Preface[:5], false}, {"GET / HTTP/1.1\r\n", true}} {
		server, client := net.Pipe()
		pc := &problemConn{Conn: server}
		go func() { _, _ = client.Write([]byte(c.first)) }()
		buf := make([]byte, 64)
		if _, err := pc.Read(buf); err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 1)
		go func() {
			b := make([]byte, 4096)
			n, _ := client.Read(b)
			got <- string(b[:n])
		}()
		if _, err := pc.Write([]byte(raw)); err != nil {
			t.Fatal(err)
		}
		if out := <-got; (out != raw) != c.rewrite {
			t.Errorf("after %q: wrote %q, rewrite %v", c.first, out, c.rewrite)
		}
		server.Close()
		client.Close()
	}
}
