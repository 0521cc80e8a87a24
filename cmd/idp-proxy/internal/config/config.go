// Package config is idp-proxy's configuration file: its YAML shape, its
// defaults, loading it with the environment and the command line's flags
// over it, checking it, and turning it into the idp.Config and
// proxy.Config the libraries take. Nothing here is needed to use pkg/idp
// or pkg/proxy from Go.
package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/proxy"
)

// File is the configuration file, section for section (see
// config.example.yaml at the repository root for every key and default).
// Start from Default, or use Load.
type File struct {
	// Listen is the proxy's listen address. ["127.0.0.1:4180"]
	Listen string `mapstructure:"listen"`
	// MetricsListen is the address of the operations listener (/healthz,
	// /readyz, /metrics); "" disables it. ["127.0.0.1:9180"]
	MetricsListen string `mapstructure:"metrics_listen"`
	// Pprof serves Go's profiler (net/http/pprof) under /debug/pprof/ on
	// the operations listener, never on the public one. [false]
	Pprof bool `mapstructure:"pprof"`

	Upstream proxy.UpstreamConfig `mapstructure:"upstream"`
	IDP      IDP                  `mapstructure:"idp"`
	// Routes are the rules, matched as http.ServeMux patterns.
	Routes []proxy.RouteConfig `mapstructure:"routes"`
	// DefaultPolicy applies to requests no rule matches: "authenticated"
	// (any valid token) or "deny" (403). ["authenticated"]
	DefaultPolicy string `mapstructure:"default_policy"`

	Headers proxy.HeadersConfig `mapstructure:"headers"`
	Server  Server              `mapstructure:"server"`
	TLS     TLS                 `mapstructure:"tls"`
	Log     Log                 `mapstructure:"log"`
	Session Session             `mapstructure:"session"`
	// ForwardAuth gives verdicts to an ingress.
	ForwardAuth ForwardAuth `mapstructure:"forward_auth"`
	// SkipAuthPreflight lets CORS preflights through to the upstream
	// without a token. [false]
	SkipAuthPreflight bool `mapstructure:"skip_auth_preflight"`

	// fromEnv maps the keys Load took from the environment to their
	// variables, so that Check's errors can name the variable.
	fromEnv map[string]string
}

// IDP holds every idp.Config option under its specification name.
type IDP struct {
	ServerURL         string        `mapstructure:"server_url"`
	Realm             string        `mapstructure:"realm"`
	ClientID          string        `mapstructure:"client_id"`
	ClientSecret      string        `mapstructure:"client_secret"`
	ClientSecretFile  string        `mapstructure:"client_secret_file"`
	TokenLocation     string        `mapstructure:"token_location"` // header|cookie ["header"]
	CookieName        string        `mapstructure:"cookie_name"`    // ["access_token"]
	IncludeRoutes     bool          `mapstructure:"include_routes"`
	RedirectURI       string        `mapstructure:"redirect_uri"`
	AuthPrefix        string        `mapstructure:"auth_prefix"` // ["/auth"]
	SessionSecret     string        `mapstructure:"session_secret"`
	SessionSecretFile string        `mapstructure:"session_secret_file"`
	ExcludedPaths     []string      `mapstructure:"excluded_paths"`
	Audience          string        `mapstructure:"audience"` // [client_id]
	OptionalAudiences []string      `mapstructure:"optional_audiences"`
	JWKSCacheTTL      time.Duration `mapstructure:"jwks_cache_ttl"` // [1h]
	Algorithms        []string      `mapstructure:"algorithms"`     // [RS256]
	HTTPTimeout       time.Duration `mapstructure:"http_timeout"`   // [10s]
	Leeway            time.Duration `mapstructure:"leeway"`         // [10s]; 0 = none
	// VerifiedCacheSize bounds the cache of verified tokens; 0 disables
	// it. [10000]
	VerifiedCacheSize int `mapstructure:"verified_cache_size"`
}

// Server bounds the proxy's listeners.
type Server struct {
	ReadHeaderTimeout time.Duration `mapstructure:"read_header_timeout"` // [5s]
	ReadTimeout       time.Duration `mapstructure:"read_timeout"`        // [30s]
	WriteTimeout      time.Duration `mapstructure:"write_timeout"`       // [60s]
	IdleTimeout       time.Duration `mapstructure:"idle_timeout"`        // [120s]
	MaxHeaderBytes    int           `mapstructure:"max_header_bytes"`    // [32768]
	// MaxBodyBytes bounds request bodies (413 beyond); negative means
	// unlimited. [10 MiB]
	MaxBodyBytes int64 `mapstructure:"max_body_bytes"`
	// DrainDelay: on SIGTERM, readiness fails at once and the listener
	// keeps accepting this long before it closes. [5s]
	DrainDelay      time.Duration `mapstructure:"drain_delay"`
	ShutdownTimeout time.Duration `mapstructure:"shutdown_timeout"` // [25s]
}

// TLS enables HTTPS on the proxy listener when both files are set.
type TLS struct {
	CertFile string `mapstructure:"cert_file"`
	KeyFile  string `mapstructure:"key_file"`
	// MinVersion is the oldest TLS version accepted: "1.2" or "1.3".
	// ["1.2"]
	MinVersion string `mapstructure:"min_version"`
}

// MinTLSVersion returns tls.min_version as a crypto/tls constant.
func (t TLS) MinTLSVersion() (uint16, error) {
	switch strings.TrimPrefix(strings.ToLower(t.MinVersion), "tls") {
	case "", "1.2":
		return tls.VersionTLS12, nil
	case "1.3":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("tls.min_version %q: want \"1.2\" or \"1.3\"", t.MinVersion)
}

// Log selects the log output.
type Log struct {
	Format string `mapstructure:"format"` // json|text ["json"]
	Level  string `mapstructure:"level"`  // debug|info|warn|error ["info"]
}

// Default listen addresses.
const (
	DefaultListen        = "127.0.0.1:4180"
	DefaultMetricsListen = "127.0.0.1:9180"
)

// Default returns the file's defaults. The upstream URL and the idp
// section's server_url, realm and client_id have none.
func Default() File {
	pd := proxy.DefaultConfig()
	return File{
		Listen:        DefaultListen,
		MetricsListen: DefaultMetricsListen,
		Upstream:      pd.Upstream,
		IDP: IDP{
			TokenLocation: "header",
			CookieName:    idp.DefaultCookieName,
			AuthPrefix:    idp.DefaultAuthPrefix,
			JWKSCacheTTL:  idp.DefaultJWKSCacheTTL,
			Algorithms:    []string{"RS256"},
			HTTPTimeout:   idp.DefaultHTTPTimeout,
			Leeway:        idp.DefaultLeeway,

			VerifiedCacheSize: idp.DefaultVerifiedCacheSize,
		},
		DefaultPolicy: pd.DefaultPolicy,
		Headers:       pd.Headers,
		Server: Server{
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       30 * time.Second,
			WriteTimeout:      60 * time.Second,
			IdleTimeout:       120 * time.Second,
			MaxHeaderBytes:    32 << 10,
			MaxBodyBytes:      pd.MaxBodyBytes,
			DrainDelay:        5 * time.Second,
			ShutdownTimeout:   25 * time.Second,
		},
		TLS:         TLS{MinVersion: "1.2"},
		Log:         Log{Format: "json", Level: "info"},
		ForwardAuth: ForwardAuth{TrustedCIDRs: []string{}},
		Session: Session{
			Store:         StoreCookie,
			CookieName:    idp.DefaultSessionCookie,
			MaxAge:        idp.DefaultSessionMaxAge,
			RefreshMargin: idp.DefaultSessionRefreshMargin,
		},
	}
}

// withDefaults fills the zero fields of the sections only the program
// uses; pkg/idp and pkg/proxy default their own.
func (f File) withDefaults() File {
	d := Default()
	setStr := func(p *string, def string) {
		if *p == "" {
			*p = def
		}
	}
	setDur := func(p *time.Duration, def time.Duration) {
		if *p == 0 {
			*p = def
		}
	}
	setStr(&f.Listen, d.Listen)
	setDur(&f.Server.ReadHeaderTimeout, d.Server.ReadHeaderTimeout)
	setDur(&f.Server.ReadTimeout, d.Server.ReadTimeout)
	setDur(&f.Server.WriteTimeout, d.Server.WriteTimeout)
	setDur(&f.Server.IdleTimeout, d.Server.IdleTimeout)
	setDur(&f.Server.ShutdownTimeout, d.Server.ShutdownTimeout)
	if f.Server.MaxHeaderBytes == 0 {
		f.Server.MaxHeaderBytes = d.Server.MaxHeaderBytes
	}
	setStr(&f.Log.Format, d.Log.Format)
	setStr(&f.Log.Level, d.Log.Level)
	return f
}

// Proxy returns the proxy's part of the file.
func (f File) Proxy() proxy.Config {
	return proxy.Config{
		Upstream:      f.Upstream,
		Routes:        f.Routes,
		DefaultPolicy: f.DefaultPolicy,
		Headers:       f.Headers,
		MaxBodyBytes:  f.Server.MaxBodyBytes,

		SkipAuthPreflight: f.SkipAuthPreflight,
		ForwardAuth:       proxy.ForwardAuthConfig{Enabled: f.ForwardAuth.Enabled, TrustedCIDRs: f.ForwardAuth.TrustedCIDRs},
	}
}

// PluginConfig translates the idp section into an idp.Config, reading the
// secret files. Logger, HTTPClient and the other Go-only fields are left
// for the caller.
func (f File) PluginConfig() (idp.Config, error) { return f.pluginConfig(false) }

// placeholderSecret stands for a secret that CheckOptions.NoSecrets does
// not read.
const placeholderSecret = "(not checked: --no-secrets) 32+ bytes placeholder"

func (f File) pluginConfig(noSecrets bool) (idp.Config, error) {
	c := f.IDP
	var secret, session string
	var err error
	if noSecrets {
		if c.ClientSecret != "" || c.ClientSecretFile != "" {
			secret = placeholderSecret
		}
		session = placeholderSecret
	} else {
		if secret, err = secretValue("idp.client_secret", c.ClientSecret, c.ClientSecretFile); err != nil {
			return idp.Config{}, err
		}
		if session, err = secretValue("idp.session_secret", c.SessionSecret, c.SessionSecretFile); err != nil {
			return idp.Config{}, err
		}
	}
	leeway := c.Leeway
	if leeway == 0 {
		leeway = -1 // explicitly none: idp reads 0 as "default"
	}
	cacheSize := c.VerifiedCacheSize
	if cacheSize == 0 {
		cacheSize = -1 // disabled: idp reads 0 as "default"
	}
	ic := idp.Config{
		ServerURL:         c.ServerURL,
		Realm:             c.Realm,
		ClientID:          c.ClientID,
		ClientSecret:      secret,
		TokenLocation:     idp.TokenLocation(strings.ToUpper(c.TokenLocation)),
		CookieName:        c.CookieName,
		IncludeRoutes:     c.IncludeRoutes,
		RedirectURI:       c.RedirectURI,
		AuthPrefix:        c.AuthPrefix,
		ExcludedPaths:     c.ExcludedPaths,
		Audience:          c.Audience,
		OptionalAudiences: c.OptionalAudiences,
		JWKSCacheTTL:      c.JWKSCacheTTL,
		Algorithms:        c.Algorithms,
		HTTPTimeout:       c.HTTPTimeout,
		Leeway:            leeway,
		VerifiedCacheSize: cacheSize,
	}
	if session != "" {
		ic.SessionSecret = []byte(session)
	}
	if ic.Session, err = f.Session.sessionConfig(noSecrets); err != nil {
		return idp.Config{}, err
	}
	return ic, nil
}

// CheckOptions adjust File.CheckWith.
type CheckOptions struct {
	// NoSecrets checks a file whose secrets are not available here (they
	// come from the environment or from files mounted at deploy time):
	// secret files are not read and missing secrets are not errors; every
	// other check runs.
	NoSecrets bool
}

// Check validates the whole file without contacting anything: the
// program's sections, the idp section (idp.Config.Validate) and the
// proxy's (proxy.Check, which compiles the rules). It returns the rule
// table check-config prints, and every problem found, one per line.
func (f File) Check() (string, error) { return f.CheckWith(CheckOptions{}) }

// CheckWith is Check with options.
func (f File) CheckWith(o CheckOptions) (string, error) {
	f = f.withDefaults()
	var errs []error
	if err := f.validate(); err != nil {
		errs = append(errs, err)
	}
	ic, err := f.pluginConfig(o.NoSecrets)
	if err != nil {
		errs = append(errs, err)
	}
	table, err := proxy.Check(f.Proxy(), ic)
	if err != nil {
		errs = append(errs, err)
	}
	return table, f.blameEnvironment(errors.Join(errs...))
}

// validate reports the problems of the program's own sections, and the
// idp section's spellings that idp.Config does not see. Every error is
// prefixed "proxy: " and names its key.
func (f File) validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("proxy: "+format, args...))
	}
	if err := checkAddr(f.Listen); err != nil {
		bad("listen %q: %v", f.Listen, err)
	}
	if f.MetricsListen != "" {
		if err := checkAddr(f.MetricsListen); err != nil {
			bad("metrics_listen %q: %v, or \"\" to disable", f.MetricsListen, err)
		} else if _, port, _ := net.SplitHostPort(f.Listen); f.MetricsListen == f.Listen && port != "0" {
			bad("metrics_listen must differ from listen (%s)", f.Listen)
		}
	}
	switch strings.ToLower(f.IDP.TokenLocation) {
	case "header", "cookie":
	default:
		bad("idp.token_location %q: want header or cookie", f.IDP.TokenLocation)
	}
	if f.IDP.ClientSecret != "" && f.IDP.ClientSecretFile != "" {
		bad("idp.client_secret and idp.client_secret_file are exclusive: set one")
	}
	if f.IDP.SessionSecret != "" && f.IDP.SessionSecretFile != "" {
		bad("idp.session_secret and idp.session_secret_file are exclusive: set one")
	}
	if f.IDP.Leeway < 0 {
		bad("idp.leeway must not be negative, got %s", f.IDP.Leeway)
	}
	if f.IDP.VerifiedCacheSize < 0 {
		bad("idp.verified_cache_size must not be negative (0 disables the cache), got %d", f.IDP.VerifiedCacheSize)
	}
	if (f.TLS.CertFile == "") != (f.TLS.KeyFile == "") {
		bad("tls.cert_file and tls.key_file go together: set both or neither")
	}
	f.Session.validate(bad)
	f.ForwardAuth.validate(bad)
	if _, err := f.TLS.MinTLSVersion(); err != nil {
		errs = append(errs, fmt.Errorf("proxy: %w", err))
	}
	switch strings.ToLower(f.Log.Format) {
	case "json", "text":
	default:
		bad("log.format %q: want json or text", f.Log.Format)
	}
	switch strings.ToLower(f.Log.Level) {
	case "debug", "info", "warn", "error":
	default:
		bad("log.level %q: want debug, info, warn or error", f.Log.Level)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"server.read_header_timeout", f.Server.ReadHeaderTimeout},
		{"server.read_timeout", f.Server.ReadTimeout},
		{"server.write_timeout", f.Server.WriteTimeout},
		{"server.idle_timeout", f.Server.IdleTimeout},
		{"server.shutdown_timeout", f.Server.ShutdownTimeout},
		{"server.drain_delay", f.Server.DrainDelay},
	} {
		if d.v < 0 {
			bad("%s must not be negative, got %s", d.name, d.v)
		}
	}
	if f.Server.MaxHeaderBytes < 0 {
		bad("server.max_header_bytes must not be negative, got %d", f.Server.MaxHeaderBytes)
	}
	return errors.Join(errs...)
}

// checkAddr checks a listen address: host:port with a port of 0 (any
// free port) to 65535, or a service name.
func checkAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port (%v)", err)
	}
	if n, err := strconv.Atoi(port); err == nil {
		if n < 0 || n > 65535 {
			return fmt.Errorf("port %d is not a TCP port (0-65535)", n)
		}
		return nil
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("port %q is not a number or a known service", port)
	}
	return nil
}

// secretValue returns the inline value, or the content of file with
// trailing newlines removed.
func secretValue(name, inline, file string) (string, error) {
	if file == "" {
		return inline, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("proxy: %s_file: %w", name, err)
	}
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" {
		return "", fmt.Errorf("proxy: %s_file %s is empty", name, file)
	}
	return s, nil
}
