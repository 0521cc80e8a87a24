package idp

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/keepalivetest"
)

// The provider client never sends a request on a connection the provider
// may be closing: this server, like a Node.js one caught at its 5 s
// keep-alive timeout, resets a connection idle for 4.5 s when the next
// request arrives on it. A POST (the token endpoint's) there fails with
// "connection reset by peer" and Go does not retry it, so the client must
// have dropped the connection first.
func TestProviderClientDropsIdleConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 4.6 s")
	}
	t.Parallel()
	const serverIdle = 4500 * time.Millisecond
	if providerIdleTimeout >= serverIdle {
		t.Fatalf("providerIdleTimeout %v is not below the %v this test's server keeps idle connections", providerIdleTimeout, serverIdle)
	}
	srv := keepalivetest.NewServer(serverIdle, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()

	client := defaultHTTPClient(5 * time.Second)
	post := func() error {
		resp, err := client.Post(srv.URL+"/token", "application/x-www-form-urlencoded", strings.NewReader("grant_type=authorization_code&code=x"))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body) // read to the end, as the oauth2 client does, so the connection goes back to the pool
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return nil
	}
	if err := post(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(serverIdle + 100*time.Millisecond)
	if err := post(); err != nil {
		t.Fatalf("POST after %v idle: %v (the client reused a connection the provider was closing)", serverIdle, err)
	}
}
