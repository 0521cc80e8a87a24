package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"reflect"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/idp-proxy/idp-proxy/cmd/idp-proxy/internal/config"
	"github.com/idp-proxy/idp-proxy/internal/buildinfo"
	"github.com/idp-proxy/idp-proxy/internal/problem"
	"github.com/idp-proxy/idp-proxy/internal/server"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/redisstore"
	"github.com/idp-proxy/idp-proxy/pkg/proxy"
)

func newServeCmd(d deps, g *globalFlags, load loadFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Run the proxy",
		Long: `serve runs the proxy on listen (HTTPS when tls.cert_file and tls.key_file
are set) and the operations endpoints /healthz (/ping), /readyz (/ready) and
/metrics on metrics_listen. It starts even when the identity provider is
down: protected routes answer 503 until its keys are loaded.

Signals:
  SIGTERM  drain, then stop: /readyz answers 503 at once, the listener keeps
           accepting for server.drain_delay (load balancers stop sending),
           then in-flight requests get server.shutdown_timeout.
  SIGINT   stop without the drain (Ctrl-C).
  SIGHUP   reload the configuration: routes, headers, default policy, the
           upstream and the idp section are re-read, checked and swapped in
           atomically; requests in flight finish under the configuration they
           started with. A file that does not check keeps the running
           configuration (logged, and counted in
           idp_proxy_config_reloads_total{result="failure"}). Listen
           addresses, TLS, server timeouts and logging need a restart.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load(cmd, g.config)
			if err != nil {
				return err
			}
			sigs := d.signals
			if sigs == nil {
				ch := make(chan os.Signal, 4)
				signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
				defer signal.Stop(ch)
				sigs = ch
			}
			reload := func() (config.File, error) { return load(cmd, g.config) }
			return serve(cmd.Context(), cfg, reload, sigs, cmd.ErrOrStderr(), d.ready, d.tuneGC)
		},
	}
}

// generation is one configuration in service: its plugin, its proxy and
// the requests it is serving.
type generation struct {
	file     config.File
	ic       idp.Config
	plugin   *idp.Plugin
	proxy    *proxy.Proxy
	inflight atomic.Int64
}

// running is the proxy handler across reloads: every request is served by
// the generation current when it arrived.
type running struct {
	cur      atomic.Pointer[generation]
	draining atomic.Bool
	metrics  *proxy.Metrics
	log      *slog.Logger
	// sessions is the Redis session store opened at start (session.store
	// redis), shared by every generation; nil otherwise.
	sessions    *redisstore.Store
	sessionsURL string
	pprof       bool // /debug/pprof/ on the operations listener
}

func (rn *running) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g := rn.acquire()
	defer g.inflight.Add(-1)
	g.proxy.ServeHTTP(w, r)
}

// forwardAuth serves the forward-auth listener across reloads, counting
// its requests on their generation like ServeHTTP.
func (rn *running) forwardAuth() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g := rn.acquire()
		defer g.inflight.Add(-1)
		g.proxy.ForwardAuthHandler().ServeHTTP(w, r)
	})
}

// acquire returns the current generation with one more request counted in
// flight; the caller subtracts it when done.
func (rn *running) acquire() *generation {
	for {
		g := rn.cur.Load()
		g.inflight.Add(1)
		// A reload that swapped g out between the Load and the Add may
		// already have seen no request in flight and retired g's plugin:
		// count on the current generation instead. retire starts only
		// after the swap, so a request counted on a still-current g
		// holds its plugin open.
		if rn.cur.Load() == g {
			return g
		}
		g.inflight.Add(-1)
	}
}

// opsHandler serves the operations endpoints across reloads; readiness
// fails while draining.
func (rn *running) opsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", proxy.Healthz)
	mux.HandleFunc("GET /ping", proxy.Healthz)
	ready := func(w http.ResponseWriter, r *http.Request) {
		if rn.draining.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"status":"draining"}`+"\n")
			return
		}
		rn.cur.Load().proxy.Readyz(w, r)
	}
	mux.HandleFunc("GET /readyz", ready)
	mux.HandleFunc("GET /ready", ready)
	mux.Handle("GET /metrics", rn.metrics.Handler())
	if rn.pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		problem.Write(w, http.StatusNotFound, "operations endpoints: GET /healthz (/ping), /readyz (/ready), /metrics")
	})
	return mux
}

// build makes a generation of f, reusing prev's plugin when the idp
// section did not change (its keys stay loaded).
func (rn *running) build(ctx context.Context, f config.File, prev *generation) (*generation, error) {
	if _, err := f.Check(); err != nil {
		return nil, err
	}
	ic, err := f.PluginConfig()
	if err != nil {
		return nil, err
	}
	ic.Logger = rn.log
	if ic.Session != nil && f.Session.Store == config.StoreRedis {
		if rn.sessions == nil || f.Session.RedisURL != rn.sessionsURL {
			return nil, errors.New("idp-proxy: session.store redis and session.redis_url apply at start: restart to change them")
		}
		ic.Session.Backend = rn.sessions
	}
	g := &generation{file: f, ic: ic}
	if prev != nil && sameIDP(prev.ic, ic) {
		g.plugin = prev.plugin
	} else {
		if g.plugin, err = idp.New(ctx, ic); err != nil {
			return nil, err
		}
		if prev != nil {
			// A new provider configuration must work before it takes over.
			wctx, cancel := context.WithTimeout(ctx, ic.WithDefaults().HTTPTimeout)
			err := g.plugin.WaitReady(wctx)
			cancel()
			if err != nil {
				_ = g.plugin.Close()
				return nil, fmt.Errorf("idp-proxy: the new idp section's keys could not be loaded: %w", err)
			}
		}
	}
	g.proxy, err = proxy.New(g.plugin, f.Proxy(), proxy.Options{Logger: rn.log, AccessLog: rn.log, Metrics: rn.metrics})
	if err != nil {
		if prev == nil || g.plugin != prev.plugin {
			_ = g.plugin.Close()
		}
		return nil, err
	}
	return g, nil
}

// sameIDP reports whether two plugin configurations are the same but for
// the Go-only fields a reload does not change.
func sameIDP(a, b idp.Config) bool {
	a.Logger, b.Logger, a.HTTPClient, b.HTTPClient, a.Now, b.Now = nil, nil, nil, nil, nil, nil
	return reflect.DeepEqual(a, b)
}

// reload re-reads the configuration and swaps it in, or keeps the running
// one and says why.
func (rn *running) reload(ctx context.Context, load func() (config.File, error), shutdownTimeout time.Duration) {
	prev := rn.cur.Load()
	f, err := load()
	var g *generation
	if err == nil {
		g, err = rn.build(ctx, f, prev)
	}
	if err != nil {
		rn.metrics.RecordReload(false)
		rn.log.Error("configuration reload failed; the running configuration is kept", "error", err)
		return
	}
	if diff := restartOnly(prev.file, f); len(diff) > 0 {
		rn.log.Warn("configuration reloaded, but these settings need a restart to apply", "keys", diff)
	}
	rn.cur.Store(g)
	rn.metrics.RecordReload(true)
	rn.log.Info("configuration reloaded", "upstream", f.Upstream.URL, "routes", len(f.Routes), "new_plugin", g.plugin != prev.plugin)
	go retire(prev, g, shutdownTimeout)
}

// retire closes a replaced generation's plugin once its requests are done
// (at most after timeout), unless the new generation kept it.
func retire(old, cur *generation, timeout time.Duration) {
	if old.plugin == cur.plugin {
		return
	}
	deadline := time.Now().Add(timeout)
	for old.inflight.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	_ = old.plugin.Close()
}

// restartOnly lists the settings that differ between a and b and apply
// only at start.
func restartOnly(a, b config.File) []string {
	var out []string
	for _, c := range []struct {
		key  string
		x, y any
	}{
		{"listen", a.Listen, b.Listen},
		{"metrics_listen", a.MetricsListen, b.MetricsListen},
		{"server", a.Server, b.Server},
		{"tls", a.TLS, b.TLS},
		{"log", a.Log, b.Log},
	} {
		if !reflect.DeepEqual(c.x, c.y) {
			out = append(out, c.key)
		}
	}
	return out
}

// serve runs the proxy until parent is done or a stop signal arrives.
// Logs go to logOut.
func serve(parent context.Context, cfg config.File, load func() (config.File, error), sigs <-chan os.Signal,
	logOut io.Writer, ready func(proxyAddr, opsAddr string), gc func(log *slog.Logger, cacheSize int)) error {
	log, err := newLogger(cfg.Log, logOut)
	if err != nil {
		return err
	}
	if gc != nil {
		gc(log, cfg.IDP.VerifiedCacheSize)
	}
	minTLS, err := cfg.TLS.MinTLSVersion()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	rn := &running{metrics: proxy.NewMetrics(), log: log, pprof: cfg.Pprof}
	if cfg.Session.Enabled && cfg.Session.Store == config.StoreRedis {
		octx, ocancel := context.WithTimeout(ctx, 10*time.Second)
		rn.sessions, err = redisstore.Open(octx, cfg.Session.RedisURL, cfg.Session.RedisPrefix)
		ocancel()
		if err != nil {
			return fmt.Errorf("idp-proxy: session store: %w", err)
		}
		rn.sessionsURL = cfg.Session.RedisURL
		defer func() { _ = rn.sessions.Close() }()
	}
	g, err := rn.build(ctx, cfg, nil)
	if err != nil {
		return err
	}
	rn.cur.Store(g)
	defer func() { _ = rn.cur.Load().plugin.Close() }()
	log.Info("starting idp-proxy", "version", buildinfo.String(), "upstream", cfg.Upstream.URL,
		"issuer", g.plugin.Issuer())

	var drain atomic.Bool
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-sigs:
				switch s {
				case syscall.SIGHUP:
					log.Info("SIGHUP: reloading the configuration")
					rn.reload(ctx, load, cfg.Server.ShutdownTimeout)
				case syscall.SIGTERM:
					drain.Store(true)
					cancel()
					return
				default:
					cancel()
					return
				}
			}
		}
	}()

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("idp-proxy: listen: %w", err)
	}
	tls := cfg.TLS.CertFile != ""
	listeners := []server.Listener{{Name: "proxy", Listener: ln, Handler: rn, TLS: tls}}
	opsAddr := ""
	if cfg.MetricsListen != "" {
		mln, err := lc.Listen(ctx, "tcp", cfg.MetricsListen)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("idp-proxy: listen for metrics: %w", err)
		}
		opsAddr = mln.Addr().String()
		listeners = append(listeners, server.Listener{Name: "ops", Listener: mln, Handler: rn.opsHandler()})
	}
	if fa := cfg.ForwardAuth; fa.Enabled && fa.Listen != "" {
		fln, err := lc.Listen(ctx, "tcp", fa.Listen)
		if err != nil {
			for _, l := range listeners {
				_ = l.Listener.Close()
			}
			return fmt.Errorf("idp-proxy: listen for forward-auth: %w", err)
		}
		log.Info("forward-auth verdicts", "listen", fln.Addr().String())
		listeners = append(listeners, server.Listener{Name: "forward-auth", Listener: fln, Handler: rn.forwardAuth()})
	}
	if ready != nil {
		ready(ln.Addr().String(), opsAddr)
	}
	s := cfg.Server
	err = server.Run(ctx, server.Options{
		ReadHeaderTimeout: s.ReadHeaderTimeout,
		ReadTimeout:       s.ReadTimeout,
		WriteTimeout:      s.WriteTimeout,
		IdleTimeout:       s.IdleTimeout,
		MaxHeaderBytes:    s.MaxHeaderBytes,
		ShutdownTimeout:   s.ShutdownTimeout,
		DrainDelay:        s.DrainDelay,
		Drain:             drain.Load,
		OnDrain:           func() { rn.draining.Store(true) },
		TLSCertFile:       cfg.TLS.CertFile,
		TLSKeyFile:        cfg.TLS.KeyFile,
		TLSMinVersion:     minTLS,
		Logger:            log,
	}, listeners...)
	if err != nil {
		log.Error("server stopped with an error", "error", err)
		return err
	}
	log.Info("stopped")
	return nil
}
