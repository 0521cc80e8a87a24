package shortener_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/memstore"
)

// A client that sends its body slower than the server's read timeout gets
// 408 problem+json, not a 400 that calls the body malformed.
func TestSlowBodyIs408(t *testing.T) {
	h := newHandler(t, newService(t, memstore.New(), shortener.Options{}), shortener.HandlerOptions{})
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ReadTimeout = 300 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// 30 bytes announced, 8 sent: the rest never comes.
	if _, err := io.WriteString(c, "POST /shorten HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 30\r\n\r\n{\"url\":\""); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("slow body: %d %s %s, want 408 problem+json", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
}
