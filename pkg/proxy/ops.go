package proxy

import (
	"io"
	"net/http"

	"github.com/idp-proxy/idp-proxy/internal/jsondoc"
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
//	GET /readyz   200 "ready" or "degraded" while this replica can serve,
//	              503 "not ready" when it cannot; the body says why, per
//	              issuer, upstream and session store (alias /ready; see
//	              Readyz)
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
	jsondoc.Write(w, http.StatusOK, map[string]any{"status": "ok"}, jsondoc.Options{})
}

// writeDraining answers readiness while the program drains.
func writeDraining(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, `{"status":"draining"}`+"\n")
}
