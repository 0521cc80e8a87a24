package cli

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/idp-proxy/idp-proxy/internal/statuswriter"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// metrics are the service's Prometheus collectors, in their own registry.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	series   map[string]*routeSeries // by route name; see bindRoutes
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shortener_http_requests_total",
			Help: "HTTP requests by route (shorten, redirect, health, metrics, openapi, page, links, link, stats, qr) and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "shortener_http_request_duration_seconds",
			Help:    "HTTP request latency by route.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, []string{"route"}),
	}
	m.reg.MustRegister(m.requests, m.duration,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// watchStore exports how svc copes with its store: redirects served from
// stale cache entries while it fails, and whether it answers.
func (m *metrics) watchStore(svc *shortener.Service) {
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "shortener_stale_redirects_total",
			Help: "Links served from the redirect cache past --cache-ttl because the store failed (--cache-stale-if-error).",
		}, func() float64 { return float64(svc.StaleServed()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "shortener_store_answering",
			Help: "1 while the link store answers within --store-timeout; 0 from a call that ran out of it until one answers (meanwhile one call at a time tries the store).",
		}, func() float64 {
			if svc.StoreAnswering() {
				return 1
			}
			return 0
		}))
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// routeLabel names the route of a served request for metrics, with
// bounded cardinality: the route table's name (Handler.RouteName),
// "metrics" for /metrics, and "redirect" for paths that match no route
// (lookups of codes that were never issued).
func routeLabel(h *shortener.Handler) func(*http.Request) string {
	return func(r *http.Request) string {
		if r.URL.Path == "/metrics" {
			return "metrics"
		}
		if name := h.RouteName(r); name != "" {
			return name
		}
		return "redirect"
	}
}

// instrument wraps next with metrics (m may be nil), labelled by route,
// and, when log is not nil, an access log. The access log records neither
// query strings nor headers. route runs after next has served the request.
// With neither, next is returned as it is: nothing to record, so no clock
// reads and no wrapper per request.
func instrument(next http.Handler, route func(*http.Request) string, m *metrics, log *slog.Logger) http.Handler {
	if m == nil && log == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statuswriter.Writer{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if sw.Status == 0 {
			sw.Status = http.StatusOK
		}
		d := time.Since(start)
		if m != nil {
			m.observe(route(r), sw.Status, d)
		}
		if log != nil {
			log.LogAttrs(r.Context(), slog.LevelInfo, "request",
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", sw.Status),
				slog.Int64("bytes", sw.Bytes),
				slog.Duration("duration", d),
				slog.String("remote", r.RemoteAddr))
		}
	})
}
