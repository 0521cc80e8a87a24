package proxy

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// decision is what the proxy decided for a request: the "decision" label
// of idp_proxy_requests_total and the access log.
type decision uint8

const (
	decAllowed     decision = iota // valid token, guards passed: forwarded
	decPublic                      // public rule or excluded path: forwarded
	decNoToken                     // 401, no token
	decInvalid                     // 401/400, invalid token or ambiguous credentials
	decForbidden                   // 403, a guard refused
	decDenied                      // 403, default_policy deny
	decUnavailable                 // 503, provider keys not loaded
	decBadRequest                  // 400/405/413, rejected before any rule applied
	decAuthRoute                   // served by the idp /auth routes
	decPreflight                   // a CORS preflight answered by the proxy (routes[].cors)
	numDecisions
)

var decisionNames = [numDecisions]string{
	"allowed", "public", "no_token", "invalid_token", "forbidden", "denied", "unavailable", "bad_request", "auth_route", "preflight",
}

func (d decision) String() string { return decisionNames[d] }

// ruleMetrics are the request counters of one rule, resolved once so that
// counting costs no label lookup.
type ruleMetrics struct {
	byDecision [numDecisions]prometheus.Counter
}

func (m *ruleMetrics) inc(d decision) {
	if m != nil {
		m.byDecision[d].Inc()
	}
}

// Metrics are the proxy's Prometheus collectors, in their own registry.
// One Metrics may be shared by the successive proxies of a process (see
// Options.Metrics), so that a configuration reload does not reset the
// counters; the key-cache gauges follow the latest proxy's plugin.
type Metrics struct {
	reg          *prometheus.Registry
	requests     *prometheus.CounterVec
	verify       prometheus.Histogram
	upstreamOK   prometheus.Observer
	upstreamFail prometheus.Observer

	httpRequests *prometheus.CounterVec
	duration     prometheus.Histogram
	byCode       [numMethods][600]atomic.Pointer[prometheus.Counter]
	reloads      *prometheus.CounterVec
	lastReload   prometheus.Gauge

	issuerRequests *prometheus.CounterVec
	dpopRefusals   *prometheus.CounterVec // by check (dpop.go)

	plugin atomic.Pointer[idp.Plugin] // the key-cache gauges read it
}

// issuerMetrics are the request counters of one trusted issuer, resolved
// once (see Proxy.countIssuer).
type issuerMetrics struct {
	name       string
	byDecision [numDecisions]prometheus.Counter
}

// forIssuers resolves the counters of the named issuers.
func (m *Metrics) forIssuers(names []string) []issuerMetrics {
	out := make([]issuerMetrics, len(names))
	for i, n := range names {
		out[i].name = n
		for d := range numDecisions {
			out[i].byDecision[d] = m.issuerRequests.WithLabelValues(n, d.String())
		}
	}
	return out
}

// issuerCollector exports the key cache of every trusted issuer, labelled
// with its name.
type issuerCollector struct{ m *Metrics }

var (
	issuerKeysDesc      = prometheus.NewDesc("idp_proxy_issuer_jwks_keys", "Usable verification keys in the cache, by trusted issuer.", []string{"issuer"}, nil)
	issuerReadyDesc     = prometheus.NewDesc("idp_proxy_issuer_jwks_ready", "1 when the trusted issuer's keys are loaded, else 0.", []string{"issuer"}, nil)
	issuerRefreshesDesc = prometheus.NewDesc("idp_proxy_issuer_jwks_refreshes_total", "Successful fetches of the trusted issuer's key set.", []string{"issuer"}, nil)
	issuerFailuresDesc  = prometheus.NewDesc("idp_proxy_issuer_jwks_failures_total", "Failed fetches of the trusted issuer's key set.", []string{"issuer"}, nil)
	unknownIssuersDesc  = prometheus.NewDesc("idp_proxy_unknown_issuer_tokens_total", "Tokens refused because their iss names no trusted issuer (no key fetched for them).", nil, nil)
)

func (c issuerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- issuerKeysDesc
	ch <- issuerReadyDesc
	ch <- issuerRefreshesDesc
	ch <- issuerFailuresDesc
	ch <- unknownIssuersDesc
}

func (c issuerCollector) Collect(ch chan<- prometheus.Metric) {
	p := c.m.plugin.Load()
	if p == nil {
		return
	}
	s := p.Stats()
	for _, is := range s.Issuers {
		ready := 0.0
		if is.Keys.Ready {
			ready = 1
		}
		ch <- prometheus.MustNewConstMetric(issuerKeysDesc, prometheus.GaugeValue, float64(is.Keys.Keys), is.Name)
		ch <- prometheus.MustNewConstMetric(issuerReadyDesc, prometheus.GaugeValue, ready, is.Name)
		ch <- prometheus.MustNewConstMetric(issuerRefreshesDesc, prometheus.CounterValue, float64(is.Keys.Refreshes), is.Name)
		ch <- prometheus.MustNewConstMetric(issuerFailuresDesc, prometheus.CounterValue, float64(is.Keys.Failures), is.Name)
	}
	ch <- prometheus.MustNewConstMetric(unknownIssuersDesc, prometheus.CounterValue, float64(s.UnknownIssuers))
}

var latencyBuckets = []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// methods are the method label's values; any other method counts as
// "other", so that clients cannot grow the label set.
var methods = [...]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"}

const numMethods = len(methods)

func methodIndex(m string) int {
	for i, name := range methods[:numMethods-1] {
		if m == name {
			return i
		}
	}
	return numMethods - 1
}

// NewMetrics returns the collectors of one or more successive proxies.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idp_proxy_requests_total",
			Help: "Requests by rule (its match pattern, or (default), (excluded) PATH, (auth), (invalid)) and decision.",
		}, []string{"rule", "decision"}),
		verify: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "idp_proxy_token_verification_duration_seconds",
			Help:    "Time to extract and verify a token (cache hits included).",
			Buckets: latencyBuckets,
		}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idp_proxy_http_requests_total",
			Help: "Requests by status code of the answer and method (methods other than the standard ones count as \"other\").",
		}, []string{"code", "method"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "idp_proxy_http_request_duration_seconds",
			Help:    "Time from receiving a request to the end of its answer's headers and body, for the whole request.",
			Buckets: latencyBuckets,
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idp_proxy_config_reloads_total",
			Help: "Configuration reloads (SIGHUP) by result: success, or failure (the running configuration was kept).",
		}, []string{"result"}),
		lastReload: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "idp_proxy_config_last_reload_success_timestamp_seconds",
			Help: "Unix time the running configuration was loaded.",
		}),
		issuerRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idp_proxy_issuer_requests_total",
			Help: "Requests that carried a valid token, by the trusted issuer that issued it (idp.issuer_name or idp.issuers[].name) and decision.",
		}, []string{"issuer", "decision"}),
	}
	m.dpopRefusals = newDPoPRefusals()
	m.reloads.WithLabelValues("success")
	m.reloads.WithLabelValues("failure")
	m.lastReload.SetToCurrentTime()
	upstream := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "idp_proxy_upstream_duration_seconds",
		Help:    "Time from sending a request upstream to its response headers, by outcome (ok: a response, error: none).",
		Buckets: latencyBuckets,
	}, []string{"outcome"})
	m.upstreamOK = upstream.WithLabelValues("ok")
	m.upstreamFail = upstream.WithLabelValues("error")
	stat := func(f func(idp.Stats) float64) func() float64 {
		return func() float64 {
			if p := m.plugin.Load(); p != nil {
				return f(p.Stats())
			}
			return 0
		}
	}
	m.reg.MustRegister(m.dpopRefusals, m.requests, m.verify, upstream, m.httpRequests, m.duration, m.reloads, m.lastReload,
		m.issuerRequests, issuerCollector{m},
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "idp_proxy_jwks_refreshes_total", Help: "Successful fetches of the provider's key set.",
		}, stat(func(s idp.Stats) float64 { return float64(s.Keys.Refreshes) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "idp_proxy_jwks_failures_total", Help: "Failed fetches of the provider's key set.",
		}, stat(func(s idp.Stats) float64 { return float64(s.Keys.Failures) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "idp_proxy_jwks_unknown_kid_skips_total", Help: "Key-set refetches for unknown kids refused by the rate limit.",
		}, stat(func(s idp.Stats) float64 { return float64(s.Keys.UnknownKIDSkips) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "idp_proxy_jwks_keys", Help: "Usable verification keys in the cache.",
		}, stat(func(s idp.Stats) float64 { return float64(s.Keys.Keys) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "idp_proxy_jwks_ready", Help: "1 when the provider's keys are loaded, else 0.",
		}, stat(func(s idp.Stats) float64 {
			if s.Keys.Ready {
				return 1
			}
			return 0
		})),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "idp_proxy_jwks_last_refresh_timestamp_seconds", Help: "Unix time of the last successful key-set fetch (0 before the first).",
		}, stat(func(s idp.Stats) float64 {
			if s.Keys.LastRefresh.IsZero() {
				return 0
			}
			return float64(s.Keys.LastRefresh.UnixNano()) / 1e9
		})),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "idp_proxy_verified_tokens_cached", Help: "Entries of the verified-token cache.",
		}, stat(func(s idp.Stats) float64 { return float64(s.CachedTokens) })),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// RecordReload counts a configuration reload; a success also sets the
// last-success time.
func (m *Metrics) RecordReload(success bool) {
	if success {
		m.reloads.WithLabelValues("success").Inc()
		m.lastReload.SetToCurrentTime()
		return
	}
	m.reloads.WithLabelValues("failure").Inc()
}

// observe counts one finished request.
func (m *Metrics) observe(method string, code int, d time.Duration) {
	m.duration.Observe(d.Seconds())
	if code < 100 || code >= 600 {
		code = 599
	}
	mi := methodIndex(method)
	slot := &m.byCode[mi][code]
	c := slot.Load()
	if c == nil {
		cc := m.httpRequests.WithLabelValues(strconv.Itoa(code), methods[mi])
		slot.CompareAndSwap(nil, &cc)
		c = slot.Load()
	}
	(*c).Inc()
}

// forRule resolves the counters of the rule labelled label.
func (m *Metrics) forRule(label string) *ruleMetrics {
	rm := &ruleMetrics{}
	for d := range numDecisions {
		rm.byDecision[d] = m.requests.WithLabelValues(label, d.String())
	}
	return rm
}

// timedTransport records the upstream latency of every round trip.
type timedTransport struct {
	rt       http.RoundTripper
	ok, fail prometheus.Observer
}

func (t timedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.rt.RoundTrip(r)
	d := time.Since(start).Seconds()
	if err != nil {
		t.fail.Observe(d)
	} else {
		t.ok.Observe(d)
	}
	return resp, err
}
