package idp_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// gatedTransport holds every request to the provider until open is
// called, so that a test can have requests arrive while the first key set
// is being fetched.
type gatedTransport struct {
	gate chan struct{}
	once sync.Once
}

func newGatedTransport(t *testing.T) *gatedTransport {
	g := &gatedTransport{gate: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *gatedTransport) open() { g.once.Do(func() { close(g.gate) }) }

func (g *gatedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	select {
	case <-g.gate:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	return http.DefaultTransport.RoundTrip(r)
}

// startPlugin is New without waiting for the keys, as a library user
// writes it.
func startPlugin(t *testing.T, cfg idp.Config) *idp.Plugin {
	t.Helper()
	p, err := idp.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func bearer(tok string) *http.Request {
	r, _ := http.NewRequest("GET", "/x", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	return r
}

// The first requests after New are served: they wait for the first key
// set while it is being fetched, instead of answering 503 until it
// arrives (18 of 20 calls right after New did, following the idptest
// example without WaitReady).
func TestFirstRequestsAfterNewWaitForTheKeys(t *testing.T) {
	srv := idptest.NewServer(t, idptest.Options{})
	tok := srv.Mint(srv.UserClaims(clientID, "alice", "creator"))
	cfg := idp.Config{ServerURL: srv.URL, Realm: srv.Realm, ClientID: clientID}
	t.Run("right after New", func(t *testing.T) {
		for i := range 20 {
			p := startPlugin(t, cfg)
			if v := p.Authorize(bearer(tok), idp.RequireRoles(idp.MatchAll, "creator")); !v.Allowed() {
				t.Fatalf("call %d: %v %q", i, v.Outcome, v.Detail())
			}
		}
	})
	t.Run("while the first fetch is held", func(t *testing.T) {
		gated := newGatedTransport(t)
		c := cfg
		c.HTTPClient = &http.Client{Transport: gated}
		c.FirstKeysWait = time.Hour // the fetch ends the wait, not the bound
		p := startPlugin(t, c)
		var waits atomic.Int32
		idp.SetFirstKeysWaitHook(p, func() { waits.Add(1); gated.open() })
		if v := p.Authorize(bearer(tok)); !v.Allowed() {
			t.Fatalf("%v %q, want allowed once the keys arrive", v.Outcome, v.Detail())
		}
		if _, err := p.Verify(t.Context(), tok); err != nil || waits.Load() != 1 {
			t.Fatalf("Verify: %v; %d waits, want 1 (the keys are loaded now)", err, waits.Load())
		}
	})
}

// A provider that is down at start still gets a prompt 503: a request
// waits only while the first fetch is under way, never for the retries,
// and a request's context or FirstKeysWait ends the wait of a provider
// that does not answer.
func TestFirstKeysWaitEndsWhenTheProviderFails(t *testing.T) {
	srv := idptest.NewServer(t, idptest.Options{})
	tok := srv.Mint(srv.UserClaims(clientID, "alice"))
	cfg := idp.Config{ServerURL: srv.URL, Realm: srv.Realm, ClientID: clientID, FirstKeysWait: time.Hour}

	t.Run("down: the first fetch fails", func(t *testing.T) {
		srv.SetDown(true)
		defer srv.SetDown(false)
		gated := newGatedTransport(t)
		c := cfg
		c.HTTPClient = &http.Client{Transport: gated}
		p := startPlugin(t, c)
		var waits atomic.Int32
		idp.SetFirstKeysWaitHook(p, func() { waits.Add(1); gated.open() })
		v := p.Authorize(bearer(tok))
		if v.Outcome != idp.Unavailable || v.Status() != http.StatusServiceUnavailable || waits.Load() != 1 {
			t.Fatalf("%v %d after %d waits, want 503 once the first fetch failed", v.Outcome, v.Status(), waits.Load())
		}
		// Later requests do not wait at all while the provider stays down.
		for range 3 {
			if v := p.Authorize(bearer(tok)); v.Outcome != idp.Unavailable || waits.Load() != 1 {
				t.Fatalf("%v, %d waits: a request waited for a retry", v.Outcome, waits.Load())
			}
		}
		srv.SetDown(false)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		if err := p.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		if v := p.Authorize(bearer(tok)); !v.Allowed() {
			t.Fatalf("after recovery: %v", v.Outcome)
		}
	})
	t.Run("down: any token waits for the first fetch's end", func(t *testing.T) {
		// A token that names no issuer is judged as it would be after the
		// first fetch failed (503), not refused 401 while the fetch is
		// still under way: the answer does not depend on the moment.
		srv.SetDown(true)
		defer srv.SetDown(false)
		gated := newGatedTransport(t)
		c := cfg
		c.HTTPClient = &http.Client{Transport: gated}
		p := startPlugin(t, c)
		var waits atomic.Int32
		idp.SetFirstKeysWaitHook(p, func() { waits.Add(1); gated.open() })
		noIss := "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"
		if v := p.Authorize(bearer(noIss)); v.Outcome != idp.Unavailable || waits.Load() != 1 {
			t.Fatalf("during the first fetch: %v %q after %d waits, want 503 once it failed", v.Outcome, v.Detail(), waits.Load())
		}
		if v := p.Authorize(bearer(noIss)); v.Outcome != idp.Unavailable {
			t.Fatalf("after the first fetch failed: %v %q", v.Outcome, v.Detail())
		}
	})
	t.Run("hanging: FirstKeysWait ends the wait", func(t *testing.T) {
		c := cfg
		c.HTTPClient = &http.Client{Transport: newGatedTransport(t)} // never opened
		c.FirstKeysWait = 10 * time.Millisecond
		p := startPlugin(t, c)
		v := p.Authorize(bearer(tok))
		if v.Outcome != idp.Unavailable || v.Detail() != "the identity provider did not send its keys in time" {
			t.Fatalf("%v %q", v.Outcome, v.Detail())
		}
	})
	t.Run("hanging: the request's context ends the wait", func(t *testing.T) {
		c := cfg
		c.HTTPClient = &http.Client{Transport: newGatedTransport(t)}
		p := startPlugin(t, c)
		ctx, cancel := context.WithCancel(t.Context())
		idp.SetFirstKeysWaitHook(p, cancel)
		_, err := p.Verify(ctx, tok)
		if !errors.Is(err, idp.ErrUnavailable) {
			t.Fatalf("Verify = %v, want ErrUnavailable", err)
		}
	})
	t.Run("negative: no wait", func(t *testing.T) {
		c := cfg
		c.HTTPClient = &http.Client{Transport: newGatedTransport(t)}
		c.FirstKeysWait = -1
		p := startPlugin(t, c)
		var waits atomic.Int32
		idp.SetFirstKeysWaitHook(p, func() { waits.Add(1) })
		if v := p.Authorize(bearer(tok)); v.Outcome != idp.Unavailable || waits.Load() != 0 {
			t.Fatalf("%v, %d waits", v.Outcome, waits.Load())
		}
	})
}
