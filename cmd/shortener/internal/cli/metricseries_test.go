package cli

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// The pre-resolved series count what WithLabelValues would: per route and
// status, including routes and statuses outside the prepared ones.
func TestMetricsObserveSeries(t *testing.T) {
	m := newMetrics()
	m.bindRoutes("redirect", "health")
	for range 3 {
		m.observe("redirect", 302, time.Millisecond)
	}
	m.observe("redirect", 404, time.Millisecond)
	m.observe("health", 200, time.Millisecond)
	m.observe("unknown", 200, time.Millisecond)
	m.observe("redirect", 700, time.Millisecond)
	for _, c := range []struct {
		route, code string
		want        float64
	}{{"redirect", "302", 3}, {"redirect", "404", 1}, {"health", "200", 1}, {"unknown", "200", 1}, {"redirect", "700", 1}} {
		var pb dto.Metric
		if err := m.requests.WithLabelValues(c.route, c.code).Write(&pb); err != nil {
			t.Fatal(err)
		}
		if got := pb.GetCounter().GetValue(); got != c.want {
			t.Errorf("requests{route=%q,code=%q} = %v, want %v", c.route, c.code, got, c.want)
		}
	}
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, f := range families {
		if f.GetName() == "shortener_http_request_duration_seconds" {
			got = len(f.GetMetric())
		}
	}
	if got != 3 {
		t.Errorf("duration series = %d, want 3 (redirect, health, unknown)", got)
	}
}
