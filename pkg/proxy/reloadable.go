package proxy

import (
	"net/http"
	"sync/atomic"
	"time"
)

// Reloadable serves with the current Proxy of a program that replaces its
// configuration while serving (idp-proxy reloads on SIGHUP): every request
// is served, start to end, by the Proxy that was current when it arrived,
// and Swap puts a new Proxy in atomically. Create it with NewReloadable.
//
// The Reloadable owns the plugins of the proxies it retires: Swap closes
// the replaced proxy's plugin once that proxy's requests are done, unless
// the new proxy shares it (a reload that kept the idp section keeps its
// keys loaded). The caller closes the plugin of the last Current.
//
// Share one Metrics between the proxies (Options.Metrics) so that the
// counters survive a swap; OpsHandler serves the first proxy's.
type Reloadable struct {
	cur      atomic.Pointer[generation]
	draining atomic.Bool
	metrics  *Metrics
}

// generation is one Proxy in service and the requests it is serving.
type generation struct {
	proxy    *Proxy
	inflight atomic.Int64
}

// NewReloadable returns a Reloadable serving with p.
func NewReloadable(p *Proxy) *Reloadable {
	rl := &Reloadable{metrics: p.metrics}
	rl.cur.Store(&generation{proxy: p})
	return rl
}

// Current returns the Proxy new requests are served by.
func (rl *Reloadable) Current() *Proxy { return rl.cur.Load().proxy }

// ServeHTTP serves r with the current Proxy.
func (rl *Reloadable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g := rl.acquire()
	defer g.inflight.Add(-1)
	g.proxy.ServeHTTP(w, r)
}

// ForwardAuthHandler is Proxy.ForwardAuthHandler of the current Proxy,
// request by request.
func (rl *Reloadable) ForwardAuthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g := rl.acquire()
		defer g.inflight.Add(-1)
		g.proxy.serveForwardAuth(w, r) // no handler built per request
	})
}

// acquire returns the current generation with one more request counted in
// flight; the caller subtracts it when done.
func (rl *Reloadable) acquire() *generation {
	for {
		g := rl.cur.Load()
		g.inflight.Add(1)
		// A Swap that replaced g between the Load and the Add may already
		// have seen no request in flight and closed g's plugin: count on
		// the current generation instead. retire starts only after the
		// swap, so a request counted on a still-current g holds its
		// plugin open.
		if rl.cur.Load() == g {
			return g
		}
		g.inflight.Add(-1)
	}
}

// Swap makes p the Proxy of new requests. The replaced proxy's plugin is
// closed once its requests are done, at most after timeout, unless p uses
// the same plugin.
func (rl *Reloadable) Swap(p *Proxy, timeout time.Duration) {
	g := &generation{proxy: p}
	old := rl.cur.Swap(g)
	go retire(old, g, timeout)
}

// retire closes a replaced generation's plugin once its requests are done
// (at most after timeout), unless the new generation kept it.
func retire(old, cur *generation, timeout time.Duration) {
	if old.proxy.plugin == cur.proxy.plugin {
		return
	}
	deadline := time.Now().Add(timeout)
	for old.inflight.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	_ = old.proxy.plugin.Close()
}

// Drain makes readiness fail from now on (503 {"status":"draining"}), so
// that load balancers stop sending before the program stops.
func (rl *Reloadable) Drain() { rl.draining.Store(true) }

// OpsHandler serves the operations endpoints of Proxy.OpsHandler for the
// current Proxy; readiness fails once Drain was called.
func (rl *Reloadable) OpsHandler(o OpsOptions) http.Handler {
	ready := func(w http.ResponseWriter, r *http.Request) {
		if rl.draining.Load() {
			writeDraining(w)
			return
		}
		rl.Current().Readyz(w, r)
	}
	return opsHandler(rl.metrics, ready, o)
}
