package cli

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// routeSeries holds a route's request series once a request has used
// them, so that a request finds its counter and histogram with a map
// look-up and an atomic load, instead of WithLabelValues (label hashing
// and a lock of the vector shared by every connection) and strconv.
// Series are still created only when first used, as WithLabelValues
// alone would.
type routeSeries struct {
	duration atomic.Pointer[prometheus.Observer]
	requests [600]atomic.Pointer[prometheus.Counter] // by status code, 100-599 used
}

// bindRoutes prepares the series of the route names a request can be
// labelled with; other names (none today) go through WithLabelValues.
func (m *metrics) bindRoutes(names ...string) {
	m.series = make(map[string]*routeSeries, len(names))
	for _, n := range names {
		m.series[n] = &routeSeries{}
	}
}

// observe counts a request of route answered with status, taking d.
func (m *metrics) observe(route string, status int, d time.Duration) {
	rs := m.series[route]
	if rs == nil || status < 100 || status >= len(rs.requests) {
		m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
		m.duration.WithLabelValues(route).Observe(d.Seconds())
		return
	}
	c := rs.requests[status].Load()
	if c == nil {
		v := m.requests.WithLabelValues(route, strconv.Itoa(status))
		c = &v
		rs.requests[status].Store(c)
	}
	(*c).Inc()
	o := rs.duration.Load()
	if o == nil {
		v := m.duration.WithLabelValues(route)
		o = &v
		rs.duration.Store(o)
	}
	(*o).Observe(d.Seconds())
}

// routeNames are the labels routeLabel gives: the names of h's routes,
// "metrics" and "redirect".
func routeNames(h *shortener.Handler) []string {
	names := []string{"metrics", "redirect"}
	for _, r := range h.Routes() {
		names = append(names, r.Name)
	}
	return names
}
