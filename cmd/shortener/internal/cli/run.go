package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/buildinfo"
	"github.com/idp-proxy/idp-proxy/internal/server"
	"github.com/idp-proxy/idp-proxy/internal/tracing/otlpexport"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/visitinfo"
)

// newLogger builds the process logger on w.
func newLogger(cfg config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	format := cfg.LogFormat
	if format == "auto" {
		format = "json"
		if f, ok := w.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
				format = "text"
			}
		}
	}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// defaultBaseURL derives the base URL from the bound address; unspecified
// hosts (0.0.0.0, ::) become localhost, which only suits local use: set
// --base-url in production.
func defaultBaseURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// runHooks connect run to its caller; every field is optional.
type runHooks struct {
	// ready gets the API's address once it listens.
	ready func(addr string)
	// drain, asked when ctx is done, reports whether to drain for
	// cfg.DrainDelay first (true after SIGTERM).
	drain func() bool
}

// run opens the store, serves until ctx is done, then drains (when
// hooks.drain says so), shuts down gracefully and closes the store.
func run(ctx context.Context, cfg config, logOut io.Writer, hooks runHooks) (err error) {
	log := newLogger(cfg, logOut)
	log.Info("starting shortener", "version", buildinfo.String())
	if cfg.Tracing {
		tp, err := otlpexport.Setup(ctx, otlpexport.Options{ServiceName: "shortener", ServiceVersion: buildinfo.Version, Logger: log})
		if err != nil {
			return fmt.Errorf("shortener: tracing: %w", err)
		}
		defer func() {
			// Last: the spans of the final visit flush are exported too,
			// within otlpexport.DefaultFlushTimeout (1 s).
			if err := tp.Shutdown(context.WithoutCancel(ctx)); err != nil {
				log.Warn("tracing: the last spans could not be exported", "err", err)
			}
		}()
		cfg.tracerProvider = tp.TracerProvider()
		log.Info("tracing on", "protocol", tp.Protocol(), "trace_parent_from", cfg.TraceParentFrom)
	}
	store, desc, err := openStore(ctx, cfg.Store, log)
	if err != nil {
		log.Error("cannot open the store", "err", err)
		return err
	}
	log.Info("store open", "store", desc)
	defer func() {
		if cerr := store.Close(); cerr != nil {
			log.Error("closing the store", "err", cerr)
			err = errors.Join(err, cerr)
		} else {
			log.Info("store closed")
		}
	}()

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("shortener: listen: %w", err)
	}
	listeners := []server.Listener{{Name: "api", Listener: ln}}
	if cfg.MetricsListen != metricsOnAPI && cfg.MetricsListen != "off" {
		mln, err := lc.Listen(ctx, "tcp", cfg.MetricsListen)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("shortener: listen for metrics: %w", err)
		}
		listeners = append(listeners, server.Listener{Name: "metrics", Listener: mln})
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = defaultBaseURL(ln.Addr())
		log.Info("base URL derived from the listen address; set --base-url for production", "base_url", cfg.BaseURL)
	}
	var plugin *idp.Plugin
	if cfg.IDPServerURL != "" || cfg.IDPIssuerURL != "" {
		plugin, err = idp.New(ctx, idp.Config{
			ServerURL:         cfg.IDPServerURL,
			Realm:             cfg.IDPRealm,
			IssuerURL:         cfg.IDPIssuerURL,
			Claims:            idp.ClaimMapping{Preset: cfg.IDPClaimsPreset},
			ClientID:          cfg.IDPClientID,
			Audience:          cfg.IDPAudience,
			OptionalAudiences: cfg.IDPOptionalAudiences,
			TokenLocation:     tokenLocation(cfg.IDPTokenLocation),
			CookieName:        cfg.IDPCookieName,
			Logger:            log,
			TracerProvider:    cfg.tracerProvider,
		})
		if err != nil {
			for _, l := range listeners {
				_ = l.Listener.Close()
			}
			return err
		}
		defer plugin.Close()
		log.Info("verifying access tokens in-process", "issuer", plugin.Issuer(), "create_roles", cfg.IDPCreateRoles)
	}
	if cfg.TrustIssuer != "" {
		plugin, err = newAssertionVerifier(ctx, cfg, log)
		if err != nil {
			for _, l := range listeners {
				_ = l.Listener.Close()
			}
			return err
		}
		defer plugin.Close()
		log.Info("verifying idp-proxy's identity assertions", "issuer", plugin.Issuer(), "audience", cfg.TrustAudience, "header", cfg.AssertionHeader)
	}
	var geo *visitinfo.GeoIP
	if cfg.GeoIPFile != "" && cfg.VisitStats {
		if geo, err = visitinfo.OpenGeoIP(cfg.GeoIPFile); err != nil {
			for _, l := range listeners {
				_ = l.Listener.Close()
			}
			return fmt.Errorf("shortener: --geoip-file: %w", err)
		}
		defer geo.Close()
		log.Info("visit statistics record countries", "geoip_file", cfg.GeoIPFile)
	}
	svc, api, metricsHandler, err := newAPI(cfg, store, plugin, geo, log)
	if err != nil {
		for _, l := range listeners {
			_ = l.Listener.Close()
		}
		return err
	}
	defer func() {
		// The last visit counts, before the store closes.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if cerr := svc.Close(ctx); cerr != nil {
			log.Error("writing the last visit counts", "err", cerr)
		}
	}()
	var draining atomic.Bool
	listeners[0].Handler = failHealthWhenDraining(api, &draining)
	if len(listeners) > 1 {
		listeners[1].Handler = metricsHandler
	}
	if hooks.ready != nil {
		hooks.ready(ln.Addr().String())
	}
	drain := hooks.drain
	if drain == nil {
		drain = func() bool { return false }
	}
	err = server.Run(ctx, server.Options{
		ShutdownTimeout: cfg.ShutdownTimeout,
		DrainDelay:      cfg.DrainDelay,
		Drain:           drain,
		OnDrain:         func() { draining.Store(true) },
		Logger:          log,
	}, listeners...)
	if err != nil {
		log.Error("server stopped with an error", "err", err)
		return err
	}
	log.Info("stopped")
	return nil
}

// drainingHealth is the health report while draining: a 503 in the
// report's shape, so that load balancers stop sending new requests.
const drainingHealth = `{"status":"draining","service":"url_shortener"}` + "\n"

// failHealthWhenDraining answers GET /health with 503 once draining is
// set; everything else is served by h as before.
func failHealthWhenDraining(h http.Handler, draining *atomic.Bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" && draining.Load() {
			hdr := w.Header()
			hdr.Set("Content-Type", "application/json")
			hdr.Set("Cache-Control", "no-store")
			hdr.Set("Retry-After", "5")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, drainingHealth)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func tokenLocation(s string) idp.TokenLocation {
	if s == "cookie" {
		return idp.TokenLocationCookie
	}
	return idp.TokenLocationHeader
}
