package proxy

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/problem"
)

// OpsOptions adjust the operations endpoints.
type OpsOptions struct {
	// Extra are further endpoints by http.ServeMux pattern, such as Go's
	// profiler under "/debug/pprof/" (only on a listener nobody else
	// reaches). pkg/proxy does not import net/http/pprof itself: its
	// init registers on http.DefaultServeMux. [none]
	Extra map[string]http.Handler
}

// OpsHandler serves the operations endpoints, meant for their own listener
// (metrics_listen) so that they are never exposed with the upstream:
//
//	GET /healthz  200 {"status":"ok"} while the process serves (alias /ping)
//	GET /readyz   200 when the provider's keys are loaded and the upstream
//	              accepts TCP connections, else 503; the body says which
//	              (alias /ready)
//	GET /metrics  Prometheus metrics of this proxy (Options.Metrics)
//
// /ping and /ready are oauth2-proxy's names, for probes written for it.
// Reloadable.OpsHandler serves the same across reloads, with options.
func (p *Proxy) OpsHandler() http.Handler {
	return opsHandler(p.metrics, p.Readyz, OpsOptions{})
}

// opsHandler is the operations mux of OpsHandler, with readiness by ready.
func opsHandler(m *Metrics, ready http.HandlerFunc, o OpsOptions) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", Healthz)
	mux.HandleFunc("GET /ping", Healthz)
	mux.HandleFunc("GET /readyz", ready)
	mux.HandleFunc("GET /ready", ready)
	mux.Handle("GET /metrics", m.Handler())
	for pattern, h := range o.Extra {
		mux.Handle(pattern, h)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		problem.Write(w, http.StatusNotFound, "operations endpoints: GET /healthz (/ping), /readyz (/ready), /metrics")
	})
	return mux
}

// Healthz answers 200 {"status":"ok"}: the process serves.
func Healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
}

// Readyz answers 200 when the plugin's keys are loaded and the upstream
// accepts TCP connections, else 503; the body says which.
//
// A session store that does not answer (Redis down) is reported as
// "session_store_reachable": false with status "degraded", and still 200:
// bearer tokens and public routes are served without it, and since every
// replica shares the store, failing readiness would take all of them out
// of the load balancer for nothing; requests that need a session answer
// 503 "the session store is unavailable" meanwhile.
func (p *Proxy) Readyz(w http.ResponseWriter, r *http.Request) {
	keys := p.plugin.Ready()
	up := p.upstream == nil || p.upstreamReachable(r.Context(), p.upstream) // forward-auth only: no upstream
	body := map[string]any{"keys_loaded": keys}
	if p.ups != nil {
		// Every upstream must accept connections: a replica that cannot
		// reach one of its apps is taken out of rotation.
		var down []string
		for _, u := range p.ups.all {
			if !p.upstreamReachable(r.Context(), u.url) {
				down = append(down, u.match)
			}
		}
		up = len(down) == 0
		if !up {
			body["upstreams_unreachable"] = down
		}
	}
	status, code := "ready", http.StatusOK
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	checked, err := p.plugin.PingSessionStore(ctx)
	cancel()
	if checked {
		body["session_store_reachable"] = err == nil
		if err != nil {
			p.log.Warn("readiness: the session store is unreachable", "error", err)
			status = "degraded"
		}
	}
	if !keys || !up {
		status, code = "not ready", http.StatusServiceUnavailable
	}
	body["status"], body["upstream_reachable"] = status, up
	writeJSON(w, code, body)
}

// upstreamReachable dials the address of the upstream u.
func (p *Proxy) upstreamReachable(ctx context.Context, u *url.URL) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
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

// writeDraining answers readiness while the program drains.
func writeDraining(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, `{"status":"draining"}`+"\n")
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
