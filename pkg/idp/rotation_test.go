package idp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// memoryTransport serves requests with a handler in the calling goroutine:
// no socket, so that a plugin can run in a synctest bubble.
type memoryTransport struct{ h http.Handler }

func (m memoryTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	m.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// newMemoryPlugin is newPlugin for a synctest bubble: the provider srv
// (made outside the bubble) is served in memory, and the plugin is made
// and closed inside the bubble, its clock the bubble's.
func newMemoryPlugin(t *testing.T, srv *idptest.Server, mutate func(*idp.Config)) *idp.Plugin {
	t.Helper()
	cfg := idp.Config{ServerURL: srv.URL, Realm: srv.Realm, ClientID: clientID,
		HTTPClient: &http.Client{Transport: memoryTransport{srv.Handler()}}}
	if mutate != nil {
		mutate(&cfg)
	}
	p, err := idp.New(t.Context(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if err := p.WaitReady(t.Context()); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	return p
}

// TestRotationUnderUnknownKIDFlood: tokens with random kids keep arriving
// (a client of another realm, or an attacker) while the provider rotates
// its key. The rotated key must be accepted within one second, and the
// provider must see at most about one JWKS fetch per second.
func TestRotationUnderUnknownKIDFlood(t *testing.T) {
	srv := idptest.NewServer(t, idptest.Options{}) // outside the bubble: real sockets
	synctest.Test(t, func(t *testing.T) {
		p, err := idp.New(t.Context(), idp.Config{
			ServerURL: srv.URL, Realm: srv.Realm, ClientID: clientID,
			HTTPClient: &http.Client{Transport: memoryTransport{srv.Handler()}},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if err := p.WaitReady(t.Context()); err != nil {
			t.Fatal(err)
		}
		claims := srv.UserClaims(clientID, "alice")
		claims["exp"] = time.Now().Add(time.Hour).Unix()
		noise := make([]string, 64)
		for i := range noise {
			noise[i] = srv.MintWith(idptest.MintOptions{KID: fmt.Sprintf("foreign-%d", i)}, claims)
		}

		// The flood: 4 clients, every 5 ms, a token whose kid is new or
		// foreign, for the whole test.
		var stop atomic.Bool
		var sent atomic.Int64
		done := make(chan struct{})
		for c := range 4 {
			go func() {
				defer func() { done <- struct{}{} }()
				for i := c; !stop.Load(); i += 4 {
					tok := noise[i%len(noise)]
					if i%2 == 0 { // half of them never seen before
						tok = srv.MintWith(idptest.MintOptions{KID: fmt.Sprintf("random-%d", i)}, claims)
					}
					_, _ = p.Verify(t.Context(), tok)
					sent.Add(1)
					time.Sleep(5 * time.Millisecond)
				}
			}()
		}

		time.Sleep(3 * time.Second) // the flood is under way
		// The worst moment: right after the flood has spent the budget.
		for n := srv.JWKSFetches(); srv.JWKSFetches() == n; {
			time.Sleep(time.Millisecond)
		}
		fetchesBefore, start := srv.JWKSFetches(), time.Now()
		srv.RotateKey()
		rotated := time.Now()
		fresh := srv.Mint(claims) // signed with the new key, whose kid is new
		var accepted time.Time
		for time.Since(rotated) < 20*time.Second {
			if _, err := p.Verify(t.Context(), fresh); err == nil {
				accepted = time.Now()
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(5 * time.Second) // keep the flood going
		stop.Store(true)
		for range 4 {
			<-done
		}
		elapsed := time.Since(start)
		fetches := srv.JWKSFetches() - fetchesBefore
		rate := float64(fetches) / elapsed.Seconds()
		t.Logf("flood of %d unknown-kid tokens; rotation accepted after %v; %d JWKS fetches in %v (%.2f/s)",
			sent.Load(), accepted.Sub(rotated), fetches, elapsed.Round(time.Millisecond), rate)
		if accepted.IsZero() {
			t.Fatal("the rotated key was never accepted")
		}
		if d := accepted.Sub(rotated); d > time.Second {
			t.Errorf("rotated key accepted after %v, want within 1s", d)
		}
		if rate > 1.25 {
			t.Errorf("%.2f JWKS fetches per second under the flood, want about 1", rate)
		}
	})
}
