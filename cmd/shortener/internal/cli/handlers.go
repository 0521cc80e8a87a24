package cli

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/problem"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/idpauth"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/visitinfo"
)

// newHandlers returns the API handler (with /metrics unless metrics have
// their own listener or are off) and the metrics handler; see newAPI.
func newHandlers(cfg config, store shortener.Store, plugin *idp.Plugin, log *slog.Logger) (api, metricsHandler http.Handler, err error) {
	_, api, metricsHandler, err = newAPI(cfg, store, plugin, nil, log)
	return api, metricsHandler, err
}

// newAPI returns the Service (for the caller to Close), the API handler
// and the metrics handler. With a plugin, creating (POST /shorten, POST
// /links) needs a valid access token with one of cfg.IDPCreateRoles (when
// set), and the other /links routes any valid token. With geo, the visit
// statistics record the country of the client's address.
func newAPI(cfg config, store shortener.Store, plugin *idp.Plugin, geo *visitinfo.GeoIP, log *slog.Logger) (svc *shortener.Service, api, metricsHandler http.Handler, err error) {
	var hopts shortener.HandlerOptions
	if plugin != nil && cfg.TrustIssuer != "" {
		hopts = idpauth.AssertionOptions(plugin, cfg.AssertionHeader)
	} else if plugin != nil {
		hopts = idpauth.HandlerOptions(plugin, cfg.IDPCreateRoles...)
	} else if cfg.TrustIdentity {
		hopts.Owner = shortener.OwnerFromHeader(cfg.IdentityHeader)
		hopts.Roles = shortener.RolesFromHeader(cfg.RolesHeader)
		if cfg.UsernameHeader != "" {
			hopts.DisplayName = shortener.NameFromHeader(cfg.UsernameHeader)
		}
		log.Warn("trusting identity headers: only run behind a proxy that sets them and strips client copies", "header", cfg.IdentityHeader, "roles_header", cfg.RolesHeader)
	}
	hopts.Page, hopts.LoginURL, hopts.LogoutURL, hopts.AdminRoles = cfg.Page, cfg.LoginURL, cfg.LogoutURL, cfg.AdminRoles
	hopts.TracerProvider, hopts.TrustedTraceParents = cfg.tracerProvider, cfg.TraceParentFrom
	if geo != nil {
		hopts.Country = geo.Country
	}
	if cfg.ClientIPHeader != "" {
		hopts.ClientIP = shortener.ClientIPFromHeader(cfg.ClientIPHeader)
	}
	if cfg.CacheSize == 0 {
		log.Warn("deprecated configuration: --cache-size 0 (SHORTENER_CACHE_SIZE=0) turns the redirect cache off: use --cache=false (SHORTENER_CACHE=false)")
	}
	staleIfError := cfg.CacheStaleIfError
	if staleIfError == 0 {
		staleIfError = -1 // the flag's 0 is "never"; the option's is its default
	}
	svc, err = shortener.New(store, shortener.Options{
		BaseURL: cfg.BaseURL, Logger: log, Cache: cfg.Cache && cfg.CacheSize > 0, CacheSize: cfg.CacheSize, CacheTTL: cfg.CacheTTL, CacheStaleIfError: staleIfError,
		CustomCodes: cfg.CustomCodes, VisitFlushInterval: cfg.VisitFlushInterval,
		StoreTimeout: cfg.StoreTimeout, TracerProvider: cfg.tracerProvider,
		VisitStats: cfg.VisitStats, VisitRetention: time.Duration(cfg.VisitRetentionDays) * 24 * time.Hour,
	})
	if err != nil {
		return nil, nil, nil, err
	}
	sh, err := shortener.NewHandler(svc, hopts)
	if err != nil {
		_ = svc.Close(context.Background())
		return nil, nil, nil, err
	}
	var m *metrics
	if cfg.MetricsListen != "off" {
		m = newMetrics()
		m.watchStore(svc)
		m.bindRoutes(routeNames(sh)...)
		metricsHandler = m.handler()
	}
	var accessLog *slog.Logger
	if cfg.AccessLog {
		accessLog = log
	}
	var h http.Handler = sh
	if m != nil && cfg.MetricsListen == metricsOnAPI {
		mh := metricsHandler
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/metrics" {
				if r.Method != http.MethodGet && r.Method != http.MethodHead {
					w.Header().Set("Allow", "GET, HEAD")
					problem.Write(w, http.StatusMethodNotAllowed, "method not allowed; use GET, HEAD")
					return
				}
				mh.ServeHTTP(w, r)
				return
			}
			sh.ServeHTTP(w, r)
		})
	}
	return svc, instrument(h, routeLabel(sh), m, accessLog), metricsHandler, nil
}
