package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/jsondoc"
)

// Readiness says whether this replica can serve, not whether everything
// it depends on is healthy. A dependency that every replica shares (an
// app of the upstreams list, a further issuer's provider, the session
// store) does not answer for one replica only: failing readiness for it
// would take every replica out of the load balancer together, and every
// other app, issuer and route with them. Those are reported as
// "degraded" (still 200), with the reason, and the requests that need
// them get their own 502/503/504 meanwhile.
//
// Not ready (503) is kept for what this replica alone lacks:
//   - the primary issuer's keys (until they are loaded no protected route
//     can be served, and a replica that has them keeps serving through a
//     provider outage, so this is the replica's state);
//   - with one upstream (upstream.url), that app: the proxy serves nothing
//     else, and as a sidecar the app is part of the replica (deploy/k8s:
//     the kubelet cannot probe an app that listens on loopback);
//   - draining after SIGTERM (Reloadable.Drain).
//
// An upstream is asked with HEAD on its URL's path, and any HTTP answer,
// whatever its status, counts: an app that refuses connections and an
// app that accepts them but does not answer (a hung process, a frozen
// host) are both "does not answer", after at most readinessTimeout.

// readinessTimeout bounds each check of /readyz. The checks run
// together, so /readyz answers within it, well under the probes' own
// timeouts (deploy/k8s: 2 s).
const readinessTimeout = time.Second

// readinessReport is the body of /readyz.
type readinessReport struct {
	// Status is "ready", "degraded" (200: something shared is missing,
	// see Problems) or "not ready" (503).
	Status string `json:"status"`
	// KeysLoaded: the primary issuer's keys are loaded.
	KeysLoaded bool `json:"keys_loaded"`
	// UpstreamReachable: every upstream answered.
	UpstreamReachable bool `json:"upstream_reachable"`
	// SessionStoreReachable is set when there is a session store to ask.
	SessionStoreReachable *bool             `json:"session_store_reachable,omitempty"`
	SessionStoreError     string            `json:"session_store_error,omitempty"`
	Issuers               []issuerReadiness `json:"issuers"`
	Upstreams             []upstreamCheck   `json:"upstreams,omitempty"`
	// Problems say, one line each, why the status is not "ready".
	Problems []string `json:"problems,omitempty"`
}

// issuerReadiness is one trusted issuer's keys in /readyz.
type issuerReadiness struct {
	Name        string     `json:"name"`
	Issuer      string     `json:"issuer"`
	Primary     bool       `json:"primary,omitempty"`
	KeysLoaded  bool       `json:"keys_loaded"`
	Keys        int        `json:"keys"`
	LastRefresh *time.Time `json:"last_refresh,omitempty"`
	// Error is why the last key fetch failed (the keys are missing, or
	// stale when KeysLoaded).
	Error string `json:"error,omitempty"`
}

// upstreamProbe is an upstream as readiness asks it.
type upstreamProbe struct {
	match    string // its upstreams pattern; "" for upstream.url
	url      *url.URL
	rt       http.RoundTripper // the upstream's transport, untraced
	required bool              // not answering makes the replica not ready
}

// upstreamCheck is an upstream's answer in /readyz.
type upstreamCheck struct {
	Match     string `json:"match,omitempty"`
	URL       string `json:"url"`
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
}

// Readyz answers 200 {"status":"ready"} when this replica can serve and
// everything it depends on answers, 200 {"status":"degraded"} when it can
// serve but something shared does not answer (an app of the upstreams
// list, a further issuer's keys, the session store), and 503
// {"status":"not ready"} when it cannot (the primary issuer's keys are not
// loaded, or the one upstream of upstream.url does not answer). The body
// gives each issuer, upstream and the session store with the reason of
// every failure ("problems"). It answers within readinessTimeout (1 s).
func (p *Proxy) Readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readinessTimeout)
	defer cancel()
	rep := readinessReport{UpstreamReachable: true, Upstreams: make([]upstreamCheck, len(p.probes))}
	// Every check runs at once, each bounded by ctx (the transports and
	// the session store honour it).
	var (
		wg       sync.WaitGroup
		checked  bool
		storeErr error
	)
	for i, pr := range p.probes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep.Upstreams[i] = pr.check(ctx)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		checked, storeErr = p.plugin.PingSessionStore(ctx)
	}()
	wg.Wait()
	storeOK := storeErr == nil

	notReady, degraded := false, false
	stats := p.plugin.Stats()
	for i, is := range stats.Issuers {
		ir := issuerReadiness{Name: is.Name, Issuer: is.Issuer, Primary: i == 0, KeysLoaded: is.Keys.Ready, Keys: is.Keys.Keys}
		if !is.Keys.LastRefresh.IsZero() {
			t := is.Keys.LastRefresh.UTC()
			ir.LastRefresh = &t
		}
		if is.Keys.LastError != nil {
			ir.Error = is.Keys.LastError.Error()
		}
		rep.Issuers = append(rep.Issuers, ir)
		switch {
		case !is.Keys.Ready && i == 0:
			notReady = true
			rep.Problems = append(rep.Problems, "the keys of the primary issuer "+is.Name+" are not loaded: "+reason(ir.Error, "not fetched yet"))
		case !is.Keys.Ready:
			degraded = true
			rep.Problems = append(rep.Problems, "the keys of issuer "+is.Name+" are not loaded (its tokens get 503): "+reason(ir.Error, "not fetched yet"))
		case ir.Error != "":
			degraded = true
			rep.Problems = append(rep.Problems, "the keys of issuer "+is.Name+" could not be refreshed (the cached keys serve): "+ir.Error)
		}
	}
	rep.KeysLoaded = len(stats.Issuers) > 0 && stats.Issuers[0].Keys.Ready
	for i, c := range rep.Upstreams {
		if c.Reachable {
			continue
		}
		rep.UpstreamReachable = false
		name := c.URL
		if c.Match != "" {
			name = c.Match + " (" + c.URL + ")"
		}
		if p.probes[i].required {
			notReady = true
		} else {
			degraded = true
		}
		rep.Problems = append(rep.Problems, "upstream "+name+" does not answer: "+c.Error)
		p.log.Warn("readiness: upstream does not answer", "upstream", name, "error", c.Error)
	}
	if checked {
		rep.SessionStoreReachable = &storeOK
		if storeErr != nil {
			degraded = true
			rep.SessionStoreError = storeErr.Error()
			rep.Problems = append(rep.Problems, "the session store does not answer (requests that need a session get 503): "+storeErr.Error())
			p.log.Warn("readiness: the session store is unreachable", "error", storeErr)
		}
	}
	code := http.StatusOK
	rep.Status = "ready"
	switch {
	case notReady:
		rep.Status, code = "not ready", http.StatusServiceUnavailable
	case degraded:
		rep.Status = "degraded"
	}
	jsondoc.Write(w, code, rep, jsondoc.Options{})
}

func reason(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// check asks the upstream with HEAD on its URL's path: any HTTP answer
// counts, a refused connection and no answer by ctx's deadline do not.
func (pr upstreamProbe) check(ctx context.Context) upstreamCheck {
	u := *pr.url
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	if u.Path == "" {
		u.Path = "/"
	}
	c := upstreamCheck{Match: pr.match, URL: u.String()}
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, u.String(), nil)
	if err != nil {
		c.Error = err.Error()
		return c
	}
	req.Header.Set("User-Agent", "idp-proxy-readiness")
	resp, err := pr.rt.RoundTrip(req)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			c.Error = fmt.Sprintf("no answer within %s", readinessTimeout)
		} else {
			c.Error = err.Error()
		}
		return c
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	_ = resp.Body.Close()
	c.Reachable = true
	return c
}
