package idp_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// testClock is the clock of a test's application and provider (Config.Now,
// idptest.Options.Now): real time plus an offset that Advance moves, so
// that tokens come due for refresh or expire at once instead of after a
// sleep. Token lifetimes of minutes keep the real time a loaded machine
// takes between two steps irrelevant.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Advance moves the clock forward by d.
func (c *testClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// clockedSessionEnv is a sessionEnv whose application and provider share
// clk, with tokens living ttl and refreshed within margin of their expiry
// (at most half their lifetime).
func clockedSessionEnv(t *testing.T, clk *testClock, ttl, margin time.Duration, backend idp.SessionBackend, mutate func(*idp.Config)) *flowEnv {
	t.Helper()
	return sessionEnvWith(t, idptest.Options{TTL: ttl, Now: clk.Now}, backend, func(c *idp.Config) {
		c.Now = clk.Now
		c.Leeway = -1
		if margin != 0 {
			c.Session.RefreshMargin = margin
		}
		if mutate != nil {
			mutate(c)
		}
	})
}
