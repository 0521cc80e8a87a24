package shortener_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/testsupport"
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
	// 30 bytes announced, 8 sent: the rest never comes.
	resp, b := testsupport.SlowBody(t, srv.Listener.Addr().String(), "POST /shorten HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 30\r\n\r\n{\"url\":\"")
	if resp.StatusCode != http.StatusRequestTimeout || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("slow body: %d %s %s, want 408 problem+json", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
}
