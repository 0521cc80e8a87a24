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
	"net/netip"
	"os"
	"os/signal"
	"reflect"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/trace"

	"github.com/idp-proxy/idp-proxy/cmd/idp-proxy/internal/config"
	"github.com/idp-proxy/idp-proxy/internal/buildinfo"
	"github.com/idp-proxy/idp-proxy/internal/server"
	"github.com/idp-proxy/idp-proxy/internal/tracing"
	"github.com/idp-proxy/idp-proxy/internal/tracing/otlpexport"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/redisstore"
	"github.com/idp-proxy/idp-proxy/pkg/proxy"
)

func newServeCmd(d deps, g *globalFlags, load loadFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Run the proxy",
		Long: `serve runs the proxy on listen (HTTPS when tls.cert_file and tls.key_file
are set, or with certificates by ACME for tls.acme.domains) and the operations endpoints /healthz (/ping), /readyz (/ready) and
/metrics on metrics_listen. It starts even when the identity provider is
down: protected routes answer 503 until its keys are loaded.

Signals:
  SIGTERM  drain, then stop: /readyz answers 503 at once, the listener keeps
           accepting for server.drain_delay (load balancers stop sending),
           then in-flight requests get server.shutdown_timeout.
  SIGINT   stop without the drain (Ctrl-C).
  SIGHUP   reload the configuration: routes, headers, default policy, the
           upstream, the idp section and the assertion key file are
           re-read, checked and swapped in atomically; requests in flight
           finish under the configuration they started with. A file that does not check keeps the running
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

// running is what serve keeps across reloads.
type running struct {
	rl      *proxy.Reloadable // nil until the first build is served
	metrics *proxy.Metrics
	log     *slog.Logger
	// cur is the configuration in service; only the goroutine that starts
	// and reloads reads and writes it.
	cur active
	// sessions is the Redis session store opened at start (session.store
	// redis), shared by every configuration; nil otherwise.
	sessions    *redisstore.Store
	sessionsURL string
	// tp records spans (tracing.enabled, set at start); nil: no tracing.
	tp           trace.TracerProvider
	traceParents []netip.Prefix // tracing.trusted_cidrs, as read at start
}

// active is a configuration in service: the file and the plugin
// configuration its plugin was built from.
type active struct {
	file config.File
	ic   idp.Config
}

// build compiles f (config.Compile: the one compile step of serve, reload
// and check-config) and makes its proxy, reusing the current plugin when
// the idp section did not change (its keys stay loaded).
func (rn *running) build(ctx context.Context, f config.File) (*proxy.Proxy, active, error) {
	c, err := config.Compile(f, config.CompileOptions{})
	if err != nil {
		return nil, active{}, err
	}
	for _, d := range c.Deprecated {
		rn.log.Warn("deprecated configuration: " + d)
	}
	ic := c.IDP
	ic.Logger = rn.log
	ic.TracerProvider = rn.tp
	ic.SessionEnded = rn.sessionEnded
	if ic.Session != nil && f.Session.Store == config.StoreRedis {
		if rn.sessions == nil || f.Session.RedisURL != rn.sessionsURL {
			return nil, active{}, errors.New("idp-proxy: session.store redis and session.redis_url apply at start: restart to change them")
		}
		ic.Session.Backend = rn.sessions
		// DPoP proofs are remembered where sessions are: a proof replayed
		// to another replica is refused there too.
		ic.DPoP.Replay = rn.sessions.DPoPReplay()
	}
	var prev *idp.Plugin
	if rn.rl != nil {
		prev = rn.rl.Current().Plugin()
	}
	plugin := prev
	if prev == nil || !sameIDP(rn.cur.ic, ic) {
		if plugin, err = idp.New(ctx, ic); err != nil {
			return nil, active{}, err
		}
		if prev != nil {
			// A new provider configuration must work before it takes over.
			wctx, cancel := context.WithTimeout(ctx, ic.WithDefaults().HTTPTimeout)
			err := plugin.WaitReady(wctx)
			cancel()
			if err != nil {
				_ = plugin.Close()
				return nil, active{}, fmt.Errorf("idp-proxy: the new idp section's keys could not be loaded: %w", err)
			}
		}
	}
	px, err := proxy.NewCompiled(plugin, c.Proxy, proxy.Options{Logger: rn.log, AccessLog: rn.log, Metrics: rn.metrics,
		TracerProvider: rn.tp, TrustedTraceParents: rn.traceParents})
	if err != nil {
		if plugin != prev {
			_ = plugin.Close()
		}
		return nil, active{}, err
	}
	return px, active{file: f, ic: ic}, nil
}

// sessionEnded tells the proxy in service of a logout the plugin carried
// out (idp.Config.SessionEnded): its exchanged tokens go.
func (rn *running) sessionEnded(sid, sub string) {
	if rn.rl != nil {
		rn.rl.Current().SessionEnded(sid, sub)
	}
}

// sameIDP reports whether two plugin configurations are the same but for
// the Go-only fields a reload does not change.
func sameIDP(a, b idp.Config) bool {
	if !a.Pages.Same(b.Pages) {
		return false
	}
	a.Logger, b.Logger, a.HTTPClient, b.HTTPClient, a.Now, b.Now = nil, nil, nil, nil, nil, nil
	a.SessionEnded, b.SessionEnded = nil, nil
	a.Pages, b.Pages = nil, nil // compared by what they were made of, above
	return reflect.DeepEqual(a, b)
}

// reload re-reads the configuration and swaps it in, or keeps the running
// one and says why.
func (rn *running) reload(ctx context.Context, load func() (config.File, error), shutdownTimeout time.Duration) {
	prev := rn.rl.Current()
	f, err := load()
	var px *proxy.Proxy
	var next active
	if err == nil {
		px, next, err = rn.build(ctx, f)
	}
	if err != nil {
		rn.metrics.RecordReload(false)
		rn.log.Error("configuration reload failed; the running configuration is kept", "error", err)
		return
	}
	if diff := restartOnly(rn.cur.file, f); len(diff) > 0 {
		rn.log.Warn("configuration reloaded, but these settings need a restart to apply", "keys", diff)
	}
	rn.cur = next
	rn.rl.Swap(px, shutdownTimeout)
	rn.metrics.RecordReload(true)
	rn.log.Info("configuration reloaded", "upstream", f.Upstream.URL, "routes", len(f.Routes), "new_plugin", px.Plugin() != prev.Plugin())
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
		{"tracing", a.Tracing, b.Tracing},
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
		gc(log, cfg.IDP.VerifiedCacheEntries())
	}
	minTLS, err := cfg.TLS.MinTLSVersion()
	if err != nil {
		return err
	}
	clientAuth, clientCAs, err := cfg.TLS.ClientTLS()
	if err != nil {
		return fmt.Errorf("idp-proxy: %w", err)
	}
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	rn := &running{metrics: proxy.NewMetrics(), log: log}
	if cfg.Session.Enabled && cfg.Session.Store == config.StoreRedis {
		// Redis down at start is an outage like any other, not a reason
		// to stay down: bearer tokens are served, sessions answer 503
		// "the session store is unavailable" until Redis answers, and
		// /readyz says session_store_reachable: false meanwhile.
		rn.sessions, err = redisstore.Connect(cfg.Session.RedisURL, cfg.Session.RedisPrefix)
		if err != nil {
			return fmt.Errorf("idp-proxy: session store: %w", err)
		}
		octx, ocancel := context.WithTimeout(ctx, 5*time.Second)
		if perr := rn.sessions.Ping(octx); perr != nil {
			log.Warn("the session store (Redis) does not answer; serving without it: sessions answer 503 until it does", "error", perr)
		}
		ocancel()
		rn.sessionsURL = cfg.Session.RedisURL
		defer func() { _ = rn.sessions.Close() }()
	}
	if cfg.Tracing.Enabled {
		tp, err := otlpexport.Setup(ctx, otlpexport.Options{ServiceName: "idp-proxy", ServiceVersion: buildinfo.Version, Logger: log})
		if err != nil {
			return fmt.Errorf("idp-proxy: tracing: %w", err)
		}
		defer flushTraces(tp, log)
		rn.tp = tp.TracerProvider()
		rn.traceParents, _ = tracing.ParsePrefixes(cfg.Tracing.TrustedCIDRs) // validated by Load
		log.Info("tracing on", "protocol", tp.Protocol(), "trusted_cidrs", cfg.Tracing.TrustedCIDRs)
	}
	px, cur, err := rn.build(ctx, cfg)
	if err != nil {
		return err
	}
	rn.cur = cur
	rn.rl = proxy.NewReloadable(px)
	defer func() { _ = rn.rl.Current().Plugin().Close() }()
	log.Info("starting idp-proxy", "version", buildinfo.String(), "upstream", cfg.Upstream.URL,
		"issuer", px.Plugin().Issuer())

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
	listeners := []server.Listener{{Name: "proxy", Listener: ln, Handler: rn.rl, TLS: cfg.TLS.Enabled()}}
	var acme *acmeCerts
	if cfg.TLS.ACME.Enabled() {
		if acme, err = newACME(cfg, minTLS); err != nil {
			_ = ln.Close()
			return err
		}
		defer acme.close()
		a := cfg.TLS.ACME
		log.Info("TLS certificates by ACME, ordered at the first handshake for each name", "domains", a.Domains,
			"directory", a.DirectoryURL, "cache", a.Cache, "http_01", a.HTTPListen != "")
		if acme.http != nil {
			hln, err := lc.Listen(ctx, "tcp", cfg.TLS.ACME.HTTPListen)
			if err != nil {
				_ = ln.Close()
				return fmt.Errorf("idp-proxy: listen for ACME HTTP-01 (tls.acme.http_listen): %w", err)
			}
			listeners = append(listeners, server.Listener{Name: "acme-http", Listener: hln, Handler: acme.http})
		}
	}
	opsAddr := ""
	if cfg.MetricsListen != "" {
		mln, err := lc.Listen(ctx, "tcp", cfg.MetricsListen)
		if err != nil {
			for _, l := range listeners {
				_ = l.Listener.Close()
			}
			return fmt.Errorf("idp-proxy: listen for metrics: %w", err)
		}
		opsAddr = mln.Addr().String()
		listeners = append(listeners, server.Listener{Name: "ops", Listener: mln, Handler: rn.rl.OpsHandler(opsOptions(cfg.Pprof))})
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
		listeners = append(listeners, server.Listener{Name: "forward-auth", Listener: fln, Handler: rn.rl.ForwardAuthHandler()})
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
		H2C:               s.H2C,
		DrainDelay:        s.DrainDelay,
		Drain:             drain.Load,
		OnDrain:           rn.rl.Drain,
		TLSCertFile:       cfg.TLS.CertFile,
		TLSKeyFile:        cfg.TLS.KeyFile,
		TLSMinVersion:     minTLS,
		TLSConfig:         withClientAuth(acme.tlsConfig(), clientAuth, clientCAs),
		Logger:            log,
	}, listeners...)
	if err != nil {
		log.Error("server stopped with an error", "error", err)
		return err
	}
	log.Info("stopped")
	return nil
}

// flushTraces exports the spans still queued, waiting at most
// otlpexport.DefaultFlushTimeout (1 s) for the collector.
func flushTraces(tp *otlpexport.Provider, log *slog.Logger) {
	if err := tp.Shutdown(context.Background()); err != nil {
		log.Warn("tracing: the last spans could not be exported", "error", err)
	}
}

// opsOptions are the operations listener's options: Go's profiler under
// /debug/pprof/ when the pprof key is set.
func opsOptions(withPprof bool) proxy.OpsOptions {
	if !withPprof {
		return proxy.OpsOptions{}
	}
	return proxy.OpsOptions{Extra: map[string]http.Handler{
		"/debug/pprof/":        http.HandlerFunc(pprof.Index),
		"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
		"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
		"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
		"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
	}}
}
