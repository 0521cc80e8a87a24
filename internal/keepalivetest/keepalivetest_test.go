package keepalivetest

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A POST on a connection idle past the server's limit is reset (the
// failure the package stages); one on a fresh connection is answered.
func TestServerResetsIdleConnection(t *testing.T) {
	srv := NewServer(200*time.Millisecond, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	keep := &http.Client{Transport: &http.Transport{IdleConnTimeout: time.Minute}}
	drop := &http.Client{Transport: &http.Transport{IdleConnTimeout: 100 * time.Millisecond}}
	post := func(c *http.Client) error {
		resp, err := c.Post(srv.URL, "text/plain", strings.NewReader("x"))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	for _, c := range []*http.Client{keep, drop} {
		if err := post(c); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if err := post(keep); err == nil {
		t.Fatal("POST on a connection idle past the limit was answered")
	}
	if err := post(drop); err != nil {
		t.Fatalf("POST on a fresh connection: %v", err)
	}
}
