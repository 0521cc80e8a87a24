package idp_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/faultnet"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// While the provider hangs (its host frozen, not refusing), a token with
// an unknown kid waits for the key-set fetch at most UnknownKIDWait, then
// gets a 503 saying the provider did not send its keys in time; the fetch
// goes on, and once the provider answers the new key verifies.
func TestUnknownKIDWaitBoundedWhileProviderHangs(t *testing.T) {
	srv := idptest.NewServer(t)
	u, _ := url.Parse(srv.URL)
	fp := faultnet.New(t, u.Host)
	var d net.Dialer
	client := &http.Client{Transport: &http.Transport{
		// Every call to the provider goes through the freezable proxy.
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "tcp", fp.Addr()) },
	}}
	p := newPlugin(t, srv, func(c *idp.Config) {
		c.HTTPClient = client
		c.HTTPTimeout = 30 * time.Second
		c.UnknownKIDWait = 200 * time.Millisecond
	})
	t.Cleanup(fp.Thaw) // before the plugin's Close, which waits for the fetch

	fp.Freeze()
	srv.RotateKey()
	fresh := srv.Mint(map[string]any{"aud": clientID})
	// The bound under test is 200 ms; ctx's 10 s only turns a hang into a
	// failure (without the bound the request waits for HTTPTimeout).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := p.Verify(ctx, fresh)
	if !errors.Is(err, idp.ErrUnavailable) || ctx.Err() != nil {
		t.Fatalf("unknown kid while the provider hangs: %v (ctx %v), want ErrUnavailable within UnknownKIDWait", err, ctx.Err())
	}
	v := idp.VerdictOf(err)
	if v.Status() != http.StatusServiceUnavailable || !strings.Contains(v.Detail(), "did not send its keys in time") {
		t.Fatalf("verdict %d %q", v.Status(), v.Detail())
	}
	if p.Stats().Keys.UnknownKIDWaits == 0 {
		t.Fatal("the expired wait is not counted")
	}

	fp.Thaw()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := p.Verify(context.Background(), fresh)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rotated key never verified after the provider answered: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
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
		_, err := p.Verify(context.Background(), fresh)
		v := idp.VerdictOf(err)
		if !errors.Is(err, idp.ErrUnavailable) || v.Status() != http.StatusServiceUnavailable ||
			!strings.Contains(v.Detail(), "keys could not be fetched") {
			t.Fatalf("attempt %d: unknown kid while the provider is down: %v (%d %q), want 503", i, err, v.Status(), v.Detail())
		}
	}
	srv.SetDown(false)
	if err := p.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Verify(context.Background(), fresh); err != nil {
		t.Fatalf("the new key after the provider came back: %v", err)
	}
}
