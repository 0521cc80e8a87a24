package redisstore_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
	"github.com/idp-proxy/idp-proxy/pkg/idp/redisstore"
)

// Redis stops (faultnet Down) while a user signs out on replica A: the
// cookie is cleared and the sign-in callbacks meanwhile answer 503 naming
// the session store. Once Redis answers again, a copy of the signed-out
// cookie is refused on A from the first request on, and the session is
// deleted from Redis, so that replica B refuses it too.
func TestRedisOutageSignOut(t *testing.T) {
	ru, fp := behindFaultnet(t)
	st, err := redisstore.Connect(ru, testPrefix(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	idpSrv := idptest.NewServer(t, idptest.Options{Clients: []idptest.Client{{ID: "app", Secret: "app-secret"}}})
	lnA, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	redirect := "http://" + lnA.Addr().String() + "/auth/callback"
	start := func(ln net.Listener) string { return startReplica(t, idpSrv, st, redirect, ln, nil).base }
	a, b := start(lnA), start(nil)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(r *http.Request) (*http.Response, string) {
		t.Helper()
		resp, err := c.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(body)
	}
	get := func(u string) (*http.Response, string) {
		r, _ := http.NewRequest(http.MethodGet, u, nil)
		r.Header.Set("Accept", "text/html")
		return do(r)
	}
	callback := func() string {
		resp, _ := get(a + "/auth/login?return_to=/me")
		resp, _ = get(resp.Header.Get("Location"))
		return resp.Header.Get("Location")
	}
	if resp, body := get(callback()); resp.StatusCode != http.StatusFound {
		t.Fatalf("sign-in: %d %s", resp.StatusCode, body)
	}
	saved := jar.Cookies(&url.URL{Scheme: "http", Host: "127.0.0.1"})
	copyOn := func(base string) int {
		r, _ := http.NewRequest(http.MethodGet, base+"/me", nil)
		r.Header.Set("Accept", "application/json")
		for _, ck := range saved {
			r.AddCookie(ck)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, base := range []string{a, b} {
		if code := copyOn(base); code != http.StatusOK {
			t.Fatalf("the session on %s: %d", base, code)
		}
	}

	fp.Down()
	// A second sign-in, whose callback needs Redis.
	if resp, body := get(callback()); resp.StatusCode != http.StatusServiceUnavailable ||
		!strings.Contains(body, "session store is unavailable") || strings.Contains(body, "identity provider") {
		t.Fatalf("sign-in callback with Redis down: %d %s, want 503 naming the session store", resp.StatusCode, body)
	}
	r, _ := http.NewRequest(http.MethodPost, a+"/auth/logout", nil)
	r.Header.Set("Origin", a)
	if resp, body := do(r); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"session_store":"unavailable"`) {
		t.Fatalf("sign-out with Redis down: %d %s", resp.StatusCode, body)
	}

	fp.Up()
	if code := copyOn(a); code != http.StatusUnauthorized {
		t.Fatalf("a copy of the signed-out cookie on A as Redis answers again: %d, want 401", code)
	}
	// B learns of the sign-out from Redis, once A has deleted the session
	// there (kicked by A's read above, else within its retry interval).
	id := ""
	for _, ck := range saved {
		if ck.Name == idp.DefaultSessionCookie {
			id = ck.Value
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		if _, err := st.Get(ctx, "idp:session:"+id); errors.Is(err, idp.ErrSessionNotFound) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the signed-out session was not deleted from Redis after it came back")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code := copyOn(b); code != http.StatusUnauthorized {
		t.Fatalf("a copy of the signed-out cookie on B: %d, want 401", code)
	}
}
