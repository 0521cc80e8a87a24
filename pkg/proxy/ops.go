package proxy

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/problem"
)

// OpsHandler serves the operations endpoints, meant for their own listener
// (metrics_listen) so that they are never exposed with the upstream:
//
//	GET /healthz  200 {"status":"ok"} while the process serves
//	GET /readyz   200 when the provider's keys are loaded and the upstream
//	              accepts TCP connections, else 503; the body says which
//	GET /metrics  Prometheus metrics of this proxy (its own registry)
func (p *Proxy) OpsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		keys := p.plugin.Ready()
		up := p.upstreamReachable(r.Context())
		status, code := "ready", http.StatusOK
		if !keys || !up {
			status, code = "not ready", http.StatusServiceUnavailable
		}
		writeJSON(w, code, map[string]any{"status": status, "keys_loaded": keys, "upstream_reachable": up})
	})
	mux.Handle("GET /metrics", p.metrics.handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		problem.Write(w, http.StatusNotFound, "operations endpoints: GET /healthz, /readyz, /metrics")
	})
	return mux
}

// upstreamReachable dials the upstream's address.
func (p *Proxy) upstreamReachable(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	host := p.upstream.Host
	if p.upstream.Port() == "" {
		port := "80"
		if p.upstream.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(p.upstream.Hostname(), port)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		p.log.Warn("readiness: upstream unreachable", "upstream", host, "error", err)
		return false
	}
	_ = c.Close()
	return true
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
