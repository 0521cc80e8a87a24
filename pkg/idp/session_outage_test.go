package idp_test

import (
	"context"
	"errors"
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
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
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
	deadline := time.Now().Add(10 * time.Second)
	for e.idp.Sessions() != sessions-1 {
		if time.Now().After(deadline) {
			t.Fatalf("the provider's session was not ended after the store came back: %d sessions", e.idp.Sessions())
		}
		time.Sleep(20 * time.Millisecond)
	}
	r, _ := http.NewRequest(http.MethodGet, e.base+"/me", nil)
	for _, c := range saved {
		r.AddCookie(c)
	}
	if resp, err := http.DefaultClient.Do(r); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a copy of the cookie after the store came back: %v %v, want 401", resp, err)
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
	sw.downDelete.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, _ := http.NewRequest(http.MethodGet, e.base+"/me", nil)
		for _, c := range saved {
			r.AddCookie(c)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a copy of the cookie still works after the store came back: %d", resp.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// While the provider hangs, a session whose access token is due for
// refresh but still valid is served with that token after RefreshWait,
// not held for HTTPTimeout; the refresh goes on in the background.
func TestSessionRefreshWaitBoundedWhileProviderHangs(t *testing.T) {
	var (
		once sync.Once
		fp   *faultnet.Proxy
		d    net.Dialer
	)
	client := &http.Client{Transport: &http.Transport{
		// Every call to the provider goes through a freezable proxy.
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			once.Do(func() { fp = faultnet.New(t, addr) })
			return d.DialContext(ctx, "tcp", fp.Addr())
		},
	}}
	e := sessionEnvWith(t, idptest.Options{TTL: 4 * time.Second}, nil, func(c *idp.Config) {
		c.Leeway = -1
		c.HTTPClient = client
		c.HTTPTimeout = 30 * time.Second
		c.Session.RefreshWait = 200 * time.Millisecond
	})
	e.signIn(t, "/me")
	t.Cleanup(func() { fp.Thaw() })
	time.Sleep(2100 * time.Millisecond) // past half the token's lifetime: due for refresh
	fp.Freeze()
	// The bound under test is 200 ms; the 5 s only turns a hang (until
	// HTTPTimeout) into a failure.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.base+"/me", nil)
	r.Header.Set("Accept", "application/json")
	resp, err := e.client.Do(r)
	if err != nil {
		t.Fatalf("a session due for refresh while the provider hangs: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a session due for refresh while the provider hangs: %d, want 200 with the current token", resp.StatusCode)
	}
}
