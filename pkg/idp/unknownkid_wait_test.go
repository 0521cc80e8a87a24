package idp_test

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// While the provider hangs (it neither answers nor refuses), a token with
// an unknown kid waits for the key-set fetch at most UnknownKIDWait, then
// gets a 503 saying the provider did not send its keys in time; the fetch
// goes on, and once the provider answers the new key verifies. In a
// synctest bubble (the provider served in memory, its hang a gate): the
// 200 ms are the bubble's, so the bound is checked exactly.
func TestUnknownKIDWaitBoundedWhileProviderHangs(t *testing.T) {
	srv := idptest.NewServer(t)
	synctest.Test(t, func(t *testing.T) {
		gate := &hangingTransport{h: srv.Handler()}
		p := newMemoryPlugin(t, srv, func(c *idp.Config) {
			c.HTTPClient = &http.Client{Transport: gate}
			c.HTTPTimeout = 30 * time.Second
			c.UnknownKIDWait = 200 * time.Millisecond
		})
		t.Cleanup(gate.answer) // before the plugin's Close, which waits for the fetch

		gate.hang()
		srv.RotateKey()
		fresh := srv.Mint(map[string]any{"aud": clientID})
		start := time.Now()
		_, err := p.Verify(t.Context(), fresh)
		if !errors.Is(err, idp.ErrUnavailable) || time.Since(start) != 200*time.Millisecond {
			t.Fatalf("unknown kid while the provider hangs: %v after %v, want ErrUnavailable after UnknownKIDWait (200ms)", err, time.Since(start))
		}
		v := idp.VerdictOf(err)
		if v.Status() != http.StatusServiceUnavailable || !strings.Contains(v.Detail(), "did not send its keys in time") {
			t.Fatalf("verdict %d %q", v.Status(), v.Detail())
		}
		if p.Stats().Keys.UnknownKIDWaits == 0 {
			t.Fatal("the expired wait is not counted")
		}

		gate.answer()
		synctest.Wait() // the fetch under way completes
		if _, err := p.Verify(t.Context(), fresh); err != nil {
			t.Fatalf("the rotated key after the provider answered: %v", err)
		}
	})
}

// hangingTransport serves requests in memory, as memoryTransport, but
// while it hangs they wait (until it answers, or their context ends), as
// with a provider whose host is frozen.
type hangingTransport struct {
	h      http.Handler
	mu     sync.Mutex
	frozen chan struct{} // closed by answer; nil: not hanging
}

func (g *hangingTransport) hang() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.frozen == nil {
		g.frozen = make(chan struct{})
	}
}

func (g *hangingTransport) answer() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.frozen != nil {
		close(g.frozen)
		g.frozen = nil
	}
}

func (g *hangingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	g.mu.Lock()
	frozen := g.frozen
	g.mu.Unlock()
	if frozen != nil {
		select {
		case <-frozen:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	return memoryTransport{g.h}.RoundTrip(r)
}

// While the provider is down after start, cached keys keep verifying, and
// a token with an unknown kid (perhaps a new key nobody could fetch) is a
// 503 naming the provider's keys, not a 401 that calls the token bad, also
// when the refetch budget is spent; once the provider answers it verifies.
func TestUnknownKIDWhileProviderDownIs503(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, func(c *idp.Config) { c.UnknownKIDRefreshInterval = time.Hour })
	srv.SetDown(true)
	srv.RotateKey()
	fresh := srv.Mint(map[string]any{"aud": clientID})
	for i := range 2 { // the first fetches and fails; the second finds the budget spent
		_, err := p.Verify(t.Context(), fresh)
		v := idp.VerdictOf(err)
		if !errors.Is(err, idp.ErrUnavailable) || v.Status() != http.StatusServiceUnavailable ||
			!strings.Contains(v.Detail(), "keys could not be fetched") {
			t.Fatalf("attempt %d: unknown kid while the provider is down: %v (%d %q), want 503", i, err, v.Status(), v.Detail())
		}
	}
	srv.SetDown(false)
	if err := p.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Verify(t.Context(), fresh); err != nil {
		t.Fatalf("the new key after the provider came back: %v", err)
	}
}
