package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// net/http's own answers to requests it cannot hand to a handler are
// application/problem+json like every other answer, with their status.
func TestNetHTTPErrorsAreProblemJSON(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	runErr := make(chan error, 1)
	go func() {
		runErr <- Run(ctx, Options{MaxHeaderBytes: 1 << 10}, Listener{Name: "t", Listener: ln,
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })})
	}()
	defer func() {
		cancel()
		if err := <-runErr; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	exchange := func(req string) (*http.Response, []byte) {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("reading the answer to %.40q: %v", req, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	if resp, b := exchange("GET / HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 || string(b) != "ok" {
		t.Fatalf("a good request: %d %q", resp.StatusCode, b)
	}
	for _, tc := range []struct {
		name, req string
		status    int
	}{
		{"oversized headers", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n", 431},
		{"two Host headers", "GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400},
		{"no Host", "GET / HTTP/1.1\r\n\r\n", 400},
		{"garbage request line", "HELLO\r\n\r\n", 400},
		{"unknown transfer encoding", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
		{"unsupported version", "GET / HTTP/2.5\r\nHost: x\r\n\r\n", 505},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := exchange(tc.req)
			var doc struct {
				Status int    `json:"status"`
				Title  string `json:"title"`
				Detail string `json:"detail"`
			}
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/problem+json" ||
				json.Unmarshal(b, &doc) != nil || doc.Status != tc.status || doc.Title != http.StatusText(tc.status) {
				t.Fatalf("%d %s %q, want %d problem+json", resp.StatusCode, resp.Header.Get("Content-Type"), b, tc.status)
			}
			if !resp.Close {
				t.Error("the connection is not closed after the error")
			}
		})
	}
}

func FuzzRewriteRawError(f *testing.F) {
	f.Add([]byte("HTTP/1.1 431 Request Header Fields Too Large" + rawErrorHeaders + "431 Request Header Fields Too Large"))
	f.Add([]byte("HTTP/1.1 400 Bad Request: missing required Host header" + rawErrorHeaders + "400 Bad Request: missing required Host header"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, ok := rewriteRawError(b)
		if !ok {
			return
		}
		resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(out))), nil)
		if err != nil {
			t.Fatalf("rewritten answer does not parse: %v\n%q", err, out)
		}
		body, _ := io.ReadAll(resp.Body)
		var doc map[string]any
		if resp.StatusCode < 400 || json.Unmarshal(body, &doc) != nil {
			t.Fatalf("rewritten answer %d %q", resp.StatusCode, body)
		}
	})
}
