package idp_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/faultnet"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// switchBackend is a real (memory) session backend that fails every call
// while down is set, as a Redis that has stopped.
type switchBackend struct {
	idp.SessionBackend
	down       atomic.Bool
	downDelete atomic.Bool // only Delete fails
}

func (b *switchBackend) Get(ctx context.Context, k string) ([]byte, error) {
	if b.down.Load() {
		return nil, errDown
	}
	return b.SessionBackend.Get(ctx, k)
}

func (b *switchBackend) Set(ctx context.Context, k string, v []byte, ttl time.Duration) error {
	if b.down.Load() {
		return errDown
	}
	return b.SessionBackend.Set(ctx, k, v, ttl)
}

func (b *switchBackend) SetNX(ctx context.Context, k string, v []byte, ttl time.Duration) (bool, error) {
	if b.down.Load() {
		return false, errDown
	}
	return b.SessionBackend.SetNX(ctx, k, v, ttl)
}

func (b *switchBackend) Delete(ctx context.Context, keys ...string) error {
	if b.down.Load() || b.downDelete.Load() {
		return errDown
	}
	return b.SessionBackend.Delete(ctx, keys...)
}

func (b *switchBackend) AddToSet(ctx context.Context, k, m string, ttl time.Duration) error {
	if b.down.Load() {
		return errDown
	}
	return b.SessionBackend.AddToSet(ctx, k, m, ttl)
}

func (b *switchBackend) SetMembers(ctx context.Context, k string) ([]string, error) {
	if b.down.Load() {
		return nil, errDown
	}
	return b.SessionBackend.SetMembers(ctx, k)
}

// A session-store outage is reported as the session store's (503 naming
// it, with Retry-After), never as the provider's keys; bearer tokens keep
// working; a sign-out during the outage clears the browser's cookie at
// once, and the session is deleted from the store, and ended at the
// provider, once the store is back.
func TestSessionStoreOutage(t *testing.T) {
	sw := &switchBackend{SessionBackend: idp.NewMemoryBackend()}
	e := sessionEnv(t, sw, nil)
	e.signIn(t, "/me")
	u, _ := url.Parse(e.base)
	saved := e.client.Jar.Cookies(u) // a copy, taken before the sign-out
	sessions := e.idp.Sessions()

	sw.down.Store(true)
	resp := e.me(t, false)
	body := readBody(resp)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(body, "session store is unavailable") || strings.Contains(body, "keys") {
		t.Fatalf("a session during the outage: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	v := e.p.Authorize(func() *http.Request {
		r, _ := http.NewRequest(http.MethodGet, "/me", nil)
		for _, c := range saved {
			r.AddCookie(c)
		}
		return r
	}())
	if !errors.Is(v.Err, idp.ErrSessionStoreUnavailable) || v.Status() != http.StatusServiceUnavailable {
		t.Fatalf("verdict during the outage: %+v", v)
	}
	bearer, _ := http.NewRequest(http.MethodGet, e.base+"/me", nil)
	bearer.Header.Set("Authorization", "Bearer "+e.idp.Mint(e.idp.UserClaims(clientID, "svc")))
	if resp, err := http.DefaultClient.Do(bearer); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a bearer token during the outage: %v %v", resp, err)
	}

	resp = e.post(t, "/auth/logout", "", "")
	body = readBody(resp)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"session_store":"unavailable"`) {
		t.Fatalf("sign-out during the outage: %d %s", resp.StatusCode, body)
	}
	if resp := e.me(t, false); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("after the sign-out, still during the outage: %d, want 401 (the cookie is gone)", resp.StatusCode)
	}

	sw.down.Store(false)
	// The store answers again, and the retries have not run yet: a copy of
	// the cookie is refused all the same, this replica refusing the
	// sessions it signed out before it reads the store.
	withSaved := func() *http.Request {
		r, _ := http.NewRequest(http.MethodGet, e.base+"/me", nil)
		for _, c := range saved {
			r.AddCookie(c)
		}
		return r
	}
	if resp, err := http.DefaultClient.Do(withSaved()); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a copy of the cookie as soon as the store answers: %v %v, want 401", resp, err)
	}
	// The minute only turns a provider logout that never comes into a
	// failure.
	deadline := time.Now().Add(time.Minute)
	for e.idp.Sessions() != sessions-1 {
		if time.Now().After(deadline) {
			t.Fatalf("the provider's session was not ended after the store came back: %d sessions", e.idp.Sessions())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if resp, err := http.DefaultClient.Do(withSaved()); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a copy of the cookie after the store came back: %v %v, want 401", resp, err)
	}
	if _, err := sw.SessionBackend.Get(t.Context(), "idp:session:"+sessionCookieValue(saved)); !errors.Is(err, idp.ErrSessionNotFound) {
		t.Fatalf("the signed-out session is still in the store: %v", err)
	}
}

// sessionCookieValue is the session id a backend session's cookie holds.
func sessionCookieValue(cookies []*http.Cookie) string {
	for _, c := range cookies {
		if c.Name == idp.DefaultSessionCookie {
			return c.Value
		}
	}
	return ""
}

// A replica that stops while sign-outs still wait for the store tries
// them once more, and logs those it loses (their sessions stay valid in
// the store until they expire).
func TestSessionStoreOutageSignOutsLostOnClose(t *testing.T) {
	for _, back := range []bool{false, true} {
		sw := &switchBackend{SessionBackend: idp.NewMemoryBackend()}
		var logs syncBuffer
		e := sessionEnv(t, sw, func(c *idp.Config) {
			c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		})
		e.signIn(t, "/me")
		u, _ := url.Parse(e.base)
		id := sessionCookieValue(e.client.Jar.Cookies(u))
		sw.down.Store(true)
		if resp := e.post(t, "/auth/logout", "", ""); resp.StatusCode != http.StatusOK {
			t.Fatalf("sign-out during the outage: %d", resp.StatusCode)
		}
		sw.down.Store(!back)
		_ = e.p.Close()
		_, err := sw.SessionBackend.Get(t.Context(), "idp:session:"+id)
		lost := strings.Contains(logs.String(), "lost=1")
		if back && (lost || !errors.Is(err, idp.ErrSessionNotFound)) {
			t.Fatalf("closed with the store back: lost logged %v, session %v; want it deleted", lost, err)
		}
		if !back && !lost {
			t.Fatalf("closed with the store down: no log of the lost sign-out in %q", logs.String())
		}
	}
}

// When the store fails only at the deletion (the session was read), the
// sign-out ends the provider's session at once, clears the cookie, and
// deletes the session from the store when it answers.
func TestSessionStoreFailsAtSignOutDeletion(t *testing.T) {
	sw := &switchBackend{SessionBackend: idp.NewMemoryBackend()}
	e := sessionEnv(t, sw, nil)
	e.signIn(t, "/me")
	u, _ := url.Parse(e.base)
	saved := e.client.Jar.Cookies(u)
	sessions := e.idp.Sessions()
	sw.downDelete.Store(true)
	resp := e.post(t, "/auth/logout", "", "")
	body := readBody(resp)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"session_store":"unavailable"`) ||
		!strings.Contains(body, `"provider_logout":"done"`) {
		t.Fatalf("sign-out with the deletion failing: %d %s", resp.StatusCode, body)
	}
	if e.idp.Sessions() != sessions-1 {
		t.Fatalf("provider sessions %d → %d, want one ended", sessions, e.idp.Sessions())
	}
	if resp := e.me(t, false); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("after the sign-out: %d, want 401", resp.StatusCode)
	}
	// A copy of the cookie is refused from then on, before and after the
	// store is back (this replica refuses what it signed out), and the
	// session is deleted from the store once it answers.
	withSaved := func() *http.Request {
		r, _ := http.NewRequest(http.MethodGet, e.base+"/me", nil)
		for _, c := range saved {
			r.AddCookie(c)
		}
		return r
	}
	if resp, err := http.DefaultClient.Do(withSaved()); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a copy of the cookie while the deletion fails: %v %v, want 401", resp, err)
	}
	sw.downDelete.Store(false)
	if resp, err := http.DefaultClient.Do(withSaved()); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a copy of the cookie once the store answers: %v %v, want 401", resp, err)
	}
	// The minute only turns a deletion that never comes into a failure.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := sw.SessionBackend.Get(t.Context(), "idp:session:"+sessionCookieValue(saved)); errors.Is(err, idp.ErrSessionNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the signed-out session was not deleted from the store after it answered again")
		}
	}
}

// frozenProviderClient returns an HTTP client whose every connection to
// the provider goes through a faultnet proxy, and that proxy (made on the
// first call, so after the first dial).
func frozenProviderClient(t *testing.T) (*http.Client, func() *faultnet.Proxy) {
	var (
		mu sync.Mutex
		fp *faultnet.Proxy
		d  net.Dialer
	)
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			mu.Lock()
			if fp == nil {
				fp = faultnet.New(t, addr)
			}
			a := fp.Addr()
			mu.Unlock()
			return d.DialContext(ctx, "tcp", a)
		},
	}}
	return client, func() *faultnet.Proxy { mu.Lock(); defer mu.Unlock(); return fp }
}

// While the provider hangs during a session's refresh, one request waits
// for it: the request that started it, for RefreshWait while its token
// stays valid. Every other request is answered at once while the refresh
// is pending: with the current token while it is valid, else 503 naming
// the provider's refresh (not its keys). Counted, not timed: the
// requests that block waiting for the refresh are counted by a hook.
func TestSessionRefreshHangingProviderHoldsOneRequest(t *testing.T) {
	for name, backend := range stores() {
		t.Run(name, func(t *testing.T) {
			client, proxy := frozenProviderClient(t)
			clk := new(testClock)
			// 5 min tokens, refreshed in their last minute.
			e := clockedSessionEnv(t, clk, 5*time.Minute, 0, backend(), func(c *idp.Config) {
				c.HTTPClient = client
				c.HTTPTimeout = time.Minute // the provider hangs for longer than the test
				c.Session.RefreshWait = 50 * time.Millisecond
			})
			e.signIn(t, "/me")
			var waits atomic.Int32
			idp.SetOnRefreshWait(e.p, func() { waits.Add(1) })
			fp := proxy()
			fp.Freeze()
			t.Cleanup(fp.Thaw)

			clk.Advance(4*time.Minute + 30*time.Second) // due for refresh, valid for ~30 s
			if resp := e.me(t, false); resp.StatusCode != http.StatusOK {
				t.Fatalf("the request that starts the refresh: %d %s, want 200 after RefreshWait", resp.StatusCode, readBody(resp))
			}
			if n := waits.Load(); n != 1 {
				t.Fatalf("%d requests waited for the refresh, want 1", n)
			}
			// The refresh is still pending (the provider is frozen).
			var wg sync.WaitGroup
			var ok atomic.Int32
			for range 16 {
				wg.Go(func() {
					if resp := e.me(t, false); resp.StatusCode == http.StatusOK {
						ok.Add(1)
					} else {
						t.Errorf("while the refresh is pending, token valid: %d %s", resp.StatusCode, readBody(resp))
					}
				})
			}
			wg.Wait()
			if n := waits.Load(); ok.Load() != 16 || n != 1 {
				t.Fatalf("token valid: %d of 16 served, %d requests waited in all; want 16, and only the first waiting", ok.Load(), n)
			}

			clk.Advance(40 * time.Second) // the token has expired
			for range 16 {
				wg.Go(func() {
					resp := e.me(t, false)
					body := readBody(resp)
					if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
						!strings.Contains(body, "identity provider did not refresh") || strings.Contains(body, "keys") {
						t.Errorf("while the refresh is pending, token expired: %d %s", resp.StatusCode, body)
					}
				})
			}
			wg.Wait()
			if n := waits.Load(); n != 1 {
				t.Fatalf("token expired: %d requests waited in all, want only the first", n)
			}
		})
	}
}
