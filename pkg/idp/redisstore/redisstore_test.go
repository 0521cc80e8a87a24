package redisstore_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/testneed"
	"github.com/idp-proxy/idp-proxy/internal/testsupport"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
	"github.com/idp-proxy/idp-proxy/pkg/idp/redisstore"
)

// store connects to the Redis of TEST_REDIS_URL under a fresh prefix. In
// CI (IDP_REQUIRE_REDIS=1) a missing Redis fails the test; elsewhere it
// skips with a message.
func store(t *testing.T) *redisstore.Store {
	t.Helper()
	u := testneed.RedisURL(t, "the Redis session store tests")
	prefix := "idp-test-" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + time.Now().Format("150405.000000") + ":"
	s, err := redisstore.Open(t.Context(), u, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestStoreOperations(t *testing.T) {
	s := store(t)
	ctx := t.Context()
	if _, err := s.Get(ctx, "a"); !errors.Is(err, idp.ErrSessionNotFound) {
		t.Fatalf("absent key: %v", err)
	}
	if err := s.Set(ctx, "a", []byte("v1"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Get(ctx, "a"); err != nil || string(b) != "v1" {
		t.Fatalf("get: %q %v", b, err)
	}
	if ok, err := s.SetNX(ctx, "a", []byte("v2"), time.Minute); ok || err != nil {
		t.Fatalf("SetNX over an existing key: %v %v", ok, err)
	}
	if ok, err := s.SetNX(ctx, "b", []byte("v2"), 200*time.Millisecond); !ok || err != nil {
		t.Fatalf("SetNX on a new key: %v %v", ok, err)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := s.Get(ctx, "b"); !errors.Is(err, idp.ErrSessionNotFound) {
		t.Fatalf("expired key: %v", err)
	}
	if err := s.AddToSet(ctx, "set", "x", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.AddToSet(ctx, "set", "y", time.Second); err != nil {
		t.Fatal(err)
	}
	if m, err := s.SetMembers(ctx, "set"); err != nil || len(m) != 2 {
		t.Fatalf("members: %v %v", m, err)
	}
	if err := s.Delete(ctx, "a", "set", "absent"); err != nil {
		t.Fatal(err)
	}
	if m, _ := s.SetMembers(ctx, "set"); len(m) != 0 {
		t.Fatalf("deleted set: %v", m)
	}
}

// replica is one application instance in session mode on the shared store.
type replica struct {
	p    *idp.Plugin
	base string
}

// TestReplicasShareSessions: two replicas on one Redis. A login started
// on A completes on B (and only once), the session works on both, the
// token is refreshed once across both, and a back-channel logout received
// by B ends the session on A.
func TestReplicasShareSessions(t *testing.T) {
	st := store(t)
	// The replicas and the provider share a clock that the test moves
	// forward (real time plus an offset), so that tokens come due for
	// refresh without a sleep that a loaded machine can stretch.
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	idpSrv := idptest.NewServer(t, idptest.Options{TTL: 10 * time.Minute, Now: now,
		Clients: []idptest.Client{{ID: "app", Secret: "app-secret"}}})
	lnA, _ := net.Listen("tcp", "127.0.0.1:0")
	redirect := "http://" + lnA.Addr().String() + "/auth/callback"
	start := func(ln net.Listener) replica {
		return startReplica(t, idpSrv, st, redirect, ln, func(c *idp.Config) {
			c.NoLeeway, c.Now = true, now
			c.Session.RefreshMargin = 4 * time.Minute
		})
	}
	a, b := start(lnA), start(nil)
	c := testsupport.Browser(t) // cookies ignore ports: A's and B's are shared
	jar := c.Jar
	get := func(u string) *http.Response { t.Helper(); return testsupport.Navigate(t, c, u) }
	resp := get(a.base + "/auth/login?return_to=/me")
	resp = get(resp.Header.Get("Location"))
	cb, _ := url.Parse(resp.Header.Get("Location"))
	cbB := b.base + cb.RequestURI() // the callback lands on replica B
	stateCookies := jar.Cookies(&url.URL{Scheme: "http", Host: "127.0.0.1", Path: "/auth/callback"})
	if resp := get(cbB); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/me" {
		t.Fatalf("callback on B: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	// The same callback replayed on A, with a copy of the authentic state
	// cookie, is refused: the login state is single-use across replicas.
	replay, _ := http.NewRequest(http.MethodGet, a.base+cb.RequestURI(), nil)
	for _, ck := range stateCookies {
		replay.AddCookie(ck)
	}
	if len(stateCookies) == 0 {
		t.Fatal("no login state cookie to replay")
	}
	rr, err := http.DefaultClient.Do(replay)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(rr.Body)
	rr.Body.Close()
	if rr.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "already been completed") {
		t.Fatalf("callback replayed on A: %d %s, want 400 already completed", rr.StatusCode, body)
	}
	for _, r := range []replica{a, b} {
		if resp := get(r.base + "/me"); resp.StatusCode != 200 {
			t.Fatalf("session on %s: %d", r.base, resp.StatusCode)
		}
	}
	// Refresh once across replicas: 10 min tokens, refreshed within 4 min
	// of their expiry.
	offset.Add(int64(6*time.Minute + 30*time.Second))
	before := idpSrv.TokenRequests()
	var wg sync.WaitGroup
	var ok atomic.Int32
	for i := range 8 {
		wg.Go(func() {
			target := a.base
			if i%2 == 1 {
				target = b.base
			}
			r, _ := http.NewRequest(http.MethodGet, target+"/me", nil)
			for _, ck := range jar.Cookies(&url.URL{Scheme: "http", Host: "127.0.0.1"}) {
				r.AddCookie(ck)
			}
			if resp, err := http.DefaultClient.Do(r); err == nil {
				if resp.StatusCode == 200 {
					ok.Add(1)
				}
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	if ok.Load() != 8 {
		t.Fatalf("%d of 8 requests served during the shared refresh", ok.Load())
	}
	if n := idpSrv.TokenRequests() - before; n != 1 {
		t.Fatalf("%d refreshes across two replicas, want 1", n)
	}
	// Back-channel logout on B ends the session on A at once.
	sids := idpSrv.SessionIDs()
	form := url.Values{"logout_token": {idpSrv.LogoutToken("app", sids[0], "")}}
	bl, err := http.PostForm(b.base+"/auth/backchannel-logout", form)
	if err != nil || bl.StatusCode != 200 {
		t.Fatalf("back-channel logout: %v %v", bl, err)
	}
	bl.Body.Close()
	r, _ := http.NewRequest(http.MethodGet, a.base+"/me", nil)
	for _, ck := range jar.Cookies(&url.URL{Scheme: "http", Host: "127.0.0.1"}) {
		r.AddCookie(ck)
	}
	if resp, err := http.DefaultClient.Do(r); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("session on A after the back-channel logout on B: %v %v, want 401", resp.StatusCode, err)
	}
}
