// Package cli builds the shortener command: flags, environment, logging,
// store selection, metrics and the server's life cycle.
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
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/idp-proxy/idp-proxy/internal/buildinfo"
	"github.com/idp-proxy/idp-proxy/internal/problem"
	"github.com/idp-proxy/idp-proxy/internal/server"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// envPrefix prefixes the environment variables: --base-url is
// SHORTENER_BASE_URL.
const envPrefix = "SHORTENER"

// config is the resolved configuration of one run.
type config struct {
	Listen          string
	Store           string
	BaseURL         string
	LogFormat       string // auto | json | text
	LogLevel        slog.Level
	AccessLog       bool
	MetricsListen   string // an address, metricsOnAPI (/metrics on the API listener) or "off"
	TrustIdentity   bool
	IdentityHeader  string
	ShutdownTimeout time.Duration
	CacheSize       int           // links kept in the redirect cache; 0 = none
	CacheTTL        time.Duration // how long a cached link is served

	CustomCodes        bool          // creators may choose their code
	Page               bool          // serve the web page at GET /
	LoginURL           string        // the page's sign-in link
	AdminRoles         []string      // roles that may read and delete every link
	RolesHeader        string        // header of the caller's roles, with TrustIdentity
	VisitFlushInterval time.Duration // how often visit counts are written

	// In-process pkg/idp mode (on when IDPServerURL is set): POST /shorten
	// needs a valid access token, and the token's subject becomes the
	// link's creator.
	IDPServerURL         string
	IDPRealm             string
	IDPClientID          string
	IDPAudience          string
	IDPOptionalAudiences []string
	IDPCreateRoles       []string
	IDPTokenLocation     string // header | cookie
	IDPCookieName        string
}

// Main runs the command with os.Args and returns the exit code.
func Main() int {
	if err := NewRootCmd().ExecuteContext(context.Background()); err != nil {
		return 1
	}
	return 0
}

// Metrics listener settings. /metrics has its own loopback listener by
// default: behind idp-proxy's example rules every GET /{code} is public,
// and /metrics on the API port would be public with it.
const (
	defaultMetricsListen = "127.0.0.1:9091"
	metricsOnAPI         = "api"
)

// NewRootCmd returns the shortener command. Every call returns an
// independent command with its own viper instance.
func NewRootCmd() *cobra.Command {
	return newRootCmd(func(ctx context.Context, cfg config, stderr io.Writer) error {
		ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return run(ctx, cfg, stderr, nil)
	})
}

func newRootCmd(runFn func(context.Context, config, io.Writer) error) *cobra.Command {
	v := viper.New()
	cmd := &cobra.Command{
		Use:     "shortener",
		Version: buildinfo.String(),
		Short:   "URL shortener service (POST /shorten, GET /{code}, GET /health)",
		Long: `shortener serves a JSON API that issues short codes for URLs and redirects them.

Every flag can also be set with an environment variable: SHORTENER_ followed
by the flag name in upper case with "-" as "_" (--base-url: SHORTENER_BASE_URL).
Flags win over the environment.

Stores (--store):
  bolt:PATH or PATH          embedded bbolt file, created on first run (default)
  postgres://user@host/db    PostgreSQL (pgx DSN; pool_max_conns etc. honoured),
                             schema migrated at start; for more than one replica
  memory:                    in memory, lost on exit (tests and demos)

Identity (pick at most one):
  --idp-server-url ...       verify bearer tokens in-process with pkg/idp:
                             POST /shorten needs a valid access token (and
                             the --idp-create-roles realm roles, if any); the
                             token's subject is stored as created_by.
                             The /links API needs any valid token.
                             Redirects, /health and the page stay public.
  --trust-identity-headers   behind idp-proxy: its X-Auth-Request-User is the
                             caller (created_by, owner of /links), its
                             X-Auth-Request-Roles the roles for --admin-roles.
  Without either, /links answers 401: there is nobody to own links.

The page (GET /) and the API are described at GET /openapi.json.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: false,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(v)
			if err != nil {
				return err
			}
			return runFn(cmd.Context(), cfg, cmd.ErrOrStderr())
		},
	}
	cmd.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	f := cmd.Flags()
	f.String("listen", "127.0.0.1:8000", "address to serve the API on")
	f.String("store", "bolt:./data/shortener.db", "link store: bolt:PATH, PATH, postgres://..., or memory:")
	f.String("base-url", "", `prefix of short_url, e.g. https://sho.rt (default "http://" + the listen address)`)
	f.String("log-format", "auto", "log format: json, text, or auto (text on a terminal, json otherwise)")
	f.String("log-level", "info", "log level: debug, info, warn, error")
	f.Bool("access-log", true, "log every request (method, path, status, size, duration; never query strings or headers)")
	f.String("metrics-listen", defaultMetricsListen, `address of the Prometheus /metrics listener (keep it off the public port); "api" serves /metrics on --listen as well, "off" disables it`)
	f.Bool("trust-identity-headers", false, "record the identity header of requests as the link's creator; ONLY behind a proxy that sets it and strips client copies")
	f.String("identity-header", "X-Auth-Request-User", "header read when --trust-identity-headers is on")
	f.Duration("shutdown-timeout", 25*time.Second, "time given to in-flight requests on SIGTERM/SIGINT")
	f.Int("cache-size", 100_000, "links kept in an in-process redirect cache (about 200 bytes each plus the URL); 0 disables it")
	f.Duration("cache-ttl", time.Minute, "how long a cached link is served without asking the store (a link deleted by hand resolves for at most this long)")
	f.Bool("custom-codes", true, "let creators choose their short code (short_code: 3-64 of A-Z a-z 0-9 _ -)")
	f.Bool("page", true, "serve the web page (create links, list yours, QR codes) at GET /")
	f.String("login-url", shortener.DefaultLoginURL, "where the page sends visitors without identity (a path on this site)")
	f.StringSlice("admin-roles", nil, "roles whose holders may read and delete every link, comma-separated (realm roles in-process, --roles-header behind the proxy)")
	f.String("roles-header", "X-Auth-Request-Roles", "header of the caller's comma-separated roles, read when --trust-identity-headers is on")
	f.Duration("visit-flush-interval", time.Second, "how often visit counts kept in memory are written to the store; a crash loses at most this much")
	f.String("idp-token-location", "header", `where in-process mode reads tokens: "header" (Authorization: Bearer) or "cookie" (for the page in a browser)`)
	f.String("idp-cookie-name", "access_token", "cookie read with --idp-token-location cookie")
	f.String("idp-server-url", "", "OpenID Connect provider base URL (e.g. https://sso.example.com); enables in-process token checks on POST /shorten")
	f.String("idp-realm", "", "realm of --idp-server-url (required with it)")
	f.String("idp-client-id", "", "client ID tokens must be issued for (required with --idp-server-url)")
	f.String("idp-audience", "", "accepted audience (default: --idp-client-id)")
	f.StringSlice("idp-optional-audiences", nil, `extra accepted audiences, comma-separated (e.g. "account" for service tokens)`)
	f.StringSlice("idp-create-roles", nil, "realm roles needed to create links, comma-separated, any one suffices (default: any valid token)")
	_ = v.BindPFlags(f)
	v.SetEnvPrefix(envPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	cmd.AddCommand(newVersionCmd())
	return cmd
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "shortener", buildinfo.String())
			return err
		},
	}
}

// loadConfig reads every setting from v (flags over environment over
// defaults) and checks it. Booleans and durations are parsed strictly: a
// typo in the environment is an error, not a silent default.
func loadConfig(v *viper.Viper) (config, error) {
	var errs []error
	getBool := func(key string) bool {
		s := v.GetString(key)
		b, err := strconv.ParseBool(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("shortener: %s: %q is not a boolean", key, s))
		}
		return b
	}
	cfg := config{
		Listen:         v.GetString("listen"),
		Store:          v.GetString("store"),
		BaseURL:        v.GetString("base-url"),
		LogFormat:      strings.ToLower(v.GetString("log-format")),
		AccessLog:      getBool("access-log"),
		MetricsListen:  v.GetString("metrics-listen"),
		TrustIdentity:  getBool("trust-identity-headers"),
		IdentityHeader: v.GetString("identity-header"),

		IDPServerURL:         v.GetString("idp-server-url"),
		IDPRealm:             v.GetString("idp-realm"),
		IDPClientID:          v.GetString("idp-client-id"),
		IDPAudience:          v.GetString("idp-audience"),
		IDPOptionalAudiences: splitList(v.GetStringSlice("idp-optional-audiences")),
		IDPCreateRoles:       splitList(v.GetStringSlice("idp-create-roles")),
		IDPTokenLocation:     strings.ToLower(v.GetString("idp-token-location")),
		IDPCookieName:        v.GetString("idp-cookie-name"),

		CustomCodes: getBool("custom-codes"),
		Page:        getBool("page"),
		LoginURL:    v.GetString("login-url"),
		AdminRoles:  splitList(v.GetStringSlice("admin-roles")),
		RolesHeader: v.GetString("roles-header"),
	}
	fi := v.GetString("visit-flush-interval")
	if d, err := time.ParseDuration(fi); err != nil || d <= 0 {
		errs = append(errs, fmt.Errorf("shortener: visit-flush-interval: %q is not a positive duration", fi))
	} else {
		cfg.VisitFlushInterval = d
	}
	switch cfg.IDPTokenLocation {
	case "header", "cookie":
	default:
		errs = append(errs, fmt.Errorf("shortener: idp-token-location %q: want header or cookie", cfg.IDPTokenLocation))
	}
	if cfg.TrustIdentity && (cfg.RolesHeader == "" || strings.ContainsAny(cfg.RolesHeader, " :\t\r\n")) {
		errs = append(errs, fmt.Errorf("shortener: roles-header %q is not a header name", cfg.RolesHeader))
	}
	st := v.GetString("shutdown-timeout")
	d, err := time.ParseDuration(st)
	if err != nil || d <= 0 {
		errs = append(errs, fmt.Errorf("shortener: shutdown-timeout: %q is not a positive duration", st))
	}
	cfg.ShutdownTimeout = d
	cs := v.GetString("cache-size")
	if n, err := strconv.Atoi(cs); err != nil || n < 0 {
		errs = append(errs, fmt.Errorf("shortener: cache-size: %q is not a number ≥ 0", cs))
	} else {
		cfg.CacheSize = n
	}
	ct := v.GetString("cache-ttl")
	if d, err := time.ParseDuration(ct); err != nil || d <= 0 {
		errs = append(errs, fmt.Errorf("shortener: cache-ttl: %q is not a positive duration", ct))
	} else {
		cfg.CacheTTL = d
	}
	if err := cfg.LogLevel.UnmarshalText([]byte(v.GetString("log-level"))); err != nil {
		errs = append(errs, fmt.Errorf("shortener: log-level: %w", err))
	}
	switch cfg.LogFormat {
	case "auto", "json", "text":
	default:
		errs = append(errs, fmt.Errorf("shortener: log-format %q: want json, text or auto", cfg.LogFormat))
	}
	if cfg.Listen == "" {
		errs = append(errs, errors.New("shortener: listen: empty address"))
	}
	if cfg.MetricsListen == "" {
		errs = append(errs, fmt.Errorf("shortener: metrics-listen: empty: give an address (default %s), %q to serve /metrics on --listen, or \"off\"", defaultMetricsListen, metricsOnAPI))
	}
	if cfg.TrustIdentity && (cfg.IdentityHeader == "" || strings.ContainsAny(cfg.IdentityHeader, " :\t\r\n")) {
		errs = append(errs, fmt.Errorf("shortener: identity-header %q is not a header name", cfg.IdentityHeader))
	}
	if _, _, err := parseStore(cfg.Store); err != nil {
		errs = append(errs, err)
	}
	if cfg.IDPServerURL != "" {
		if cfg.TrustIdentity {
			errs = append(errs, errors.New("shortener: --idp-server-url and --trust-identity-headers exclude each other: pick one source of identity"))
		}
		// The rest (realm, client ID, URL shape) is checked by idp.New,
		// which names the missing or malformed option.
	} else if cfg.IDPRealm != "" || cfg.IDPClientID != "" || len(cfg.IDPCreateRoles) > 0 || len(cfg.IDPOptionalAudiences) > 0 || cfg.IDPAudience != "" || cfg.IDPTokenLocation == "cookie" {
		errs = append(errs, errors.New("shortener: --idp-* options need --idp-server-url"))
	}
	return cfg, errors.Join(errs...)
}

// splitList flattens comma-separated values (environment variables arrive
// as one string) and drops empty items.
func splitList(in []string) []string {
	var out []string
	for _, v := range in {
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
	}
	return out
}

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

// run opens the store, serves until ctx is done, then shuts down gracefully
// and closes the store. ready, when not nil, gets the API's address once
// it listens.
func run(ctx context.Context, cfg config, logOut io.Writer, ready func(addr string)) (err error) {
	log := newLogger(cfg, logOut)
	log.Info("starting shortener", "version", buildinfo.String())
	store, desc, err := openStore(ctx, cfg.Store)
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
	if cfg.IDPServerURL != "" {
		plugin, err = idp.New(ctx, idp.Config{
			ServerURL:         cfg.IDPServerURL,
			Realm:             cfg.IDPRealm,
			ClientID:          cfg.IDPClientID,
			Audience:          cfg.IDPAudience,
			OptionalAudiences: cfg.IDPOptionalAudiences,
			TokenLocation:     tokenLocation(cfg.IDPTokenLocation),
			CookieName:        cfg.IDPCookieName,
			Logger:            log,
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
	svc, api, metricsHandler, err := newAPI(cfg, store, plugin, log)
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
	listeners[0].Handler = api
	if len(listeners) > 1 {
		listeners[1].Handler = metricsHandler
	}
	if ready != nil {
		ready(ln.Addr().String())
	}
	err = server.Run(ctx, server.Options{ShutdownTimeout: cfg.ShutdownTimeout, Logger: log}, listeners...)
	if err != nil {
		log.Error("server stopped with an error", "err", err)
		return err
	}
	log.Info("stopped")
	return nil
}

func tokenLocation(s string) idp.TokenLocation {
	if s == "cookie" {
		return idp.TokenLocationCookie
	}
	return idp.TokenLocationHeader
}

// newHandlers returns the API handler (with /metrics unless metrics have
// their own listener or are off) and the metrics handler; see newAPI.
func newHandlers(cfg config, store shortener.Store, plugin *idp.Plugin, log *slog.Logger) (api, metricsHandler http.Handler, err error) {
	_, api, metricsHandler, err = newAPI(cfg, store, plugin, log)
	return api, metricsHandler, err
}

// newAPI returns the Service (for the caller to Close), the API handler
// and the metrics handler. With a plugin, creating (POST /shorten, POST
// /links) needs a valid access token with one of cfg.IDPCreateRoles (when
// set), and the other /links routes any valid token.
func newAPI(cfg config, store shortener.Store, plugin *idp.Plugin, log *slog.Logger) (svc *shortener.Service, api, metricsHandler http.Handler, err error) {
	opts := shortener.Options{
		BaseURL: cfg.BaseURL, Logger: log, CacheSize: cfg.CacheSize, CacheTTL: cfg.CacheTTL,
		CustomCodes: cfg.CustomCodes, Page: cfg.Page, LoginURL: cfg.LoginURL,
		AdminRoles: cfg.AdminRoles, VisitFlushInterval: cfg.VisitFlushInterval,
	}
	if plugin != nil {
		var guards []idp.Guard
		if len(cfg.IDPCreateRoles) > 0 {
			guards = append(guards, idp.RequireRoles(idp.MatchAny, cfg.IDPCreateRoles...))
		}
		requireCreate, requireToken := plugin.Require(guards...), plugin.Require()
		// The handler applies it to the routes that need an identity.
		opts.Authenticate = func(next http.Handler) http.Handler {
			create, other := requireCreate(next), requireToken(next)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					create.ServeHTTP(w, r)
					return
				}
				other.ServeHTTP(w, r)
			})
		}
		opts.Owner = func(r *http.Request) string {
			if u, ok := idp.UserFrom(r.Context()); ok {
				return u.Sub
			}
			return ""
		}
		opts.Roles = func(r *http.Request) []string {
			if u, ok := idp.UserFrom(r.Context()); ok {
				return u.RealmRoles
			}
			return nil
		}
	} else if cfg.TrustIdentity {
		opts.Owner = shortener.OwnerFromHeader(cfg.IdentityHeader)
		opts.Roles = shortener.RolesFromHeader(cfg.RolesHeader)
		log.Warn("trusting identity headers: only run behind a proxy that sets them and strips client copies", "header", cfg.IdentityHeader, "roles_header", cfg.RolesHeader)
	}
	svc, err = shortener.New(store, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	var m *metrics
	if cfg.MetricsListen != "off" {
		m = newMetrics()
		metricsHandler = m.handler()
	}
	var accessLog *slog.Logger
	if cfg.AccessLog {
		accessLog = log
	}
	h := svc.Handler()
	if m != nil && cfg.MetricsListen == metricsOnAPI {
		svcH, mh := h, metricsHandler
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
			svcH.ServeHTTP(w, r)
		})
	}
	return svc, instrument(h, m, accessLog), metricsHandler, nil
}
