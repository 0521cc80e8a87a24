package idp_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/testsupport"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// Zero means the default in every field: a zero Leeway is the 10 s
// default, and "none" is NoLeeway, which survives the defaults applied
// again (a plugin made from another's Config).
func TestNoLeewaySwitch(t *testing.T) {
	srv := idptest.NewServer(t)
	tok := srv.Mint(map[string]any{"aud": clientID, "exp": time.Now().Add(-5 * time.Second).Unix()})
	zero := newPlugin(t, srv, func(c *idp.Config) { c.Leeway = 0 })
	if l := zero.Config().Leeway; l != idp.DefaultLeeway {
		t.Fatalf("Leeway 0: Config().Leeway = %v, want the default %v", l, idp.DefaultLeeway)
	}
	if _, err := zero.Verify(t.Context(), tok); err != nil {
		t.Fatalf("Leeway 0 (the default, 10 s): a token expired 5 s ago: %v", err)
	}
	strict := newPlugin(t, srv, func(c *idp.Config) { c.NoLeeway = true })
	if _, err := strict.Verify(t.Context(), tok); !errors.Is(err, idp.ErrInvalidToken) {
		t.Fatalf("NoLeeway: a token expired 5 s ago: %v, want ErrInvalidToken", err)
	}
	again := newPlugin(t, srv, func(c *idp.Config) { *c = strict.Config() })
	if _, err := again.Verify(t.Context(), tok); !errors.Is(err, idp.ErrInvalidToken) {
		t.Fatalf("a plugin made from a NoLeeway Config: %v, want ErrInvalidToken", err)
	}
	// Both switches are also explicit with a size or leeway set: the
	// switch wins.
	both := newPlugin(t, srv, func(c *idp.Config) { c.NoLeeway = true; c.Leeway = time.Minute })
	if _, err := both.Verify(t.Context(), tok); !errors.Is(err, idp.ErrInvalidToken) {
		t.Fatalf("NoLeeway with Leeway 1m: %v, want ErrInvalidToken", err)
	}
}

// DisableVerifiedCache turns the cache off; VerifiedCacheSize 0 is the
// default size.
func TestDisableVerifiedCacheSwitch(t *testing.T) {
	srv := idptest.NewServer(t)
	tok := srv.Mint(map[string]any{"aud": clientID})
	for _, c := range []struct {
		name   string
		mutate func(*idp.Config)
		cached int
	}{
		{"zero size", func(c *idp.Config) { c.VerifiedCacheSize = 0 }, 1},
		{"switch", func(c *idp.Config) { c.DisableVerifiedCache = true }, 0},
		{"switch with a size", func(c *idp.Config) { c.DisableVerifiedCache = true; c.VerifiedCacheSize = 64 }, 0},
		{"negative size (deprecated)", func(c *idp.Config) { c.VerifiedCacheSize = -1 }, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newPlugin(t, srv, c.mutate)
			if _, err := p.Verify(t.Context(), tok); err != nil {
				t.Fatal(err)
			}
			if n := p.Stats().CachedTokens; n != c.cached {
				t.Fatalf("cached tokens = %d, want %d", n, c.cached)
			}
			if c.cached == 1 && p.Config().VerifiedCacheSize != idp.DefaultVerifiedCacheSize {
				t.Fatalf("Config().VerifiedCacheSize = %d, want the default", p.Config().VerifiedCacheSize)
			}
		})
	}
}

// The former spellings (negative values) still work and are logged as
// deprecated, naming the switch to use.
func TestDeprecatedNegativeSpellingsWarn(t *testing.T) {
	srv := idptest.NewServer(t)
	var buf testsupport.SyncBuffer
	p := newPlugin(t, srv, func(c *idp.Config) {
		c.Leeway, c.VerifiedCacheSize = -1, -1
		c.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	})
	for _, want := range []string{"NoLeeway", "DisableVerifiedCache"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("no deprecation warning naming %s in:\n%s", want, buf.String())
		}
	}
	if c := p.Config(); !c.NoLeeway || !c.DisableVerifiedCache {
		t.Errorf("Config() = NoLeeway %v, DisableVerifiedCache %v; want both set by the negative values", c.NoLeeway, c.DisableVerifiedCache)
	}
	buf.Reset()
	newPlugin(t, srv, func(c *idp.Config) {
		c.NoLeeway, c.DisableVerifiedCache = true, true
		c.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	})
	if strings.Contains(buf.String(), "deprecated") {
		t.Errorf("the switches logged a deprecation:\n%s", buf.String())
	}
}
