package proxy

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// Config is the proxy's configuration: the YAML file's shape, section for
// section (see config.example.yaml at the repository root). Start from
// DefaultConfig, or use Load. New fills zero durations, sizes and
// addresses with their defaults; strings whose empty value has a meaning
// (header names: "" disables the header) and booleans are taken as given.
type Config struct {
	// Listen is the proxy's listen address. ["127.0.0.1:4180"]
	Listen string `mapstructure:"listen"`
	// MetricsListen is the address of the operations listener (/healthz,
	// /readyz, /metrics); "" disables it. ["127.0.0.1:9180"]
	MetricsListen string `mapstructure:"metrics_listen"`

	Upstream UpstreamConfig `mapstructure:"upstream"`
	IDP      IDPConfig      `mapstructure:"idp"`
	// Routes are the rules, matched as http.ServeMux patterns.
	Routes []RouteConfig `mapstructure:"routes"`
	// DefaultPolicy applies to requests no rule matches: "authenticated"
	// (any valid token) or "deny" (403). ["authenticated"]
	DefaultPolicy string `mapstructure:"default_policy"`

	Headers HeadersConfig `mapstructure:"headers"`
	Server  ServerConfig  `mapstructure:"server"`
	TLS     TLSConfig     `mapstructure:"tls"`
	Log     LogConfig     `mapstructure:"log"`
}

// UpstreamConfig says where requests go.
type UpstreamConfig struct {
	// URL of the upstream, http or https, e.g. "http://127.0.0.1:8000".
	// A path in it is prefixed to every forwarded path. Required.
	URL string `mapstructure:"url"`
	// Timeout bounds the wait for the upstream's response headers; past
	// it the client gets 504. [30s]
	Timeout time.Duration `mapstructure:"timeout"`
	// MaxIdleConnsPerHost sizes the keep-alive pool to the upstream. [64]
	MaxIdleConnsPerHost int `mapstructure:"max_idle_conns_per_host"`
}

// IDPConfig holds every idp.Config option under its specification name.
type IDPConfig struct {
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
}

// RouteConfig is one rule. With none of Public, Roles, ClientRoles and
// Scopes, the rule admits any valid token.
type RouteConfig struct {
	// Match is an http.ServeMux pattern: "[METHOD ][HOST]/[PATH]".
	Match string `mapstructure:"match" yaml:"match"`
	// Public serves the route without a token. A valid token, when sent,
	// is still verified and its identity forwarded; an invalid one is
	// dropped.
	Public bool `mapstructure:"public" yaml:"public"`
	// Roles are realm roles (realm_access.roles).
	Roles []string `mapstructure:"roles" yaml:"roles"`
	// ClientRoles are roles by client ID (resource_access.<client>.roles).
	ClientRoles map[string][]string `mapstructure:"client_roles" yaml:"client_roles"`
	// Scopes are scopes of the token's scope claim.
	Scopes []string `mapstructure:"scopes" yaml:"scopes"`
	// Strategy is "all" (default) or "any", for each of Roles, every
	// client's ClientRoles, and Scopes.
	Strategy string `mapstructure:"strategy" yaml:"strategy"`
}

// HeadersConfig names the identity headers sent upstream. An empty name
// disables that header (the client's copies are stripped all the same).
type HeadersConfig struct {
	// ForwardToken sends the verified raw token upstream as
	// Authorization: Bearer; when false, Authorization is never forwarded.
	// [true]
	ForwardToken bool `mapstructure:"forward_token"`
	// User carries the sub claim. ["X-Auth-Request-User"]
	User string `mapstructure:"user"`
	// PreferredUsername carries preferred_username.
	// ["X-Auth-Request-Preferred-Username"]
	PreferredUsername string `mapstructure:"preferred_username"`
	// Email carries email, only when the token's email_verified claim is
	// true. ["X-Auth-Request-Email"]
	Email string `mapstructure:"email"`
	// Roles carries the realm roles, comma-separated. ["X-Auth-Request-Roles"]
	Roles string `mapstructure:"roles"`
	// TrustForwarded keeps the client's X-Forwarded-For (appending the
	// peer's address), X-Forwarded-Host, X-Forwarded-Proto and Forwarded.
	// Only behind a trusted load balancer. [false]
	TrustForwarded bool `mapstructure:"trust_forwarded"`
}

// ServerConfig bounds the proxy's listeners.
type ServerConfig struct {
	ReadHeaderTimeout time.Duration `mapstructure:"read_header_timeout"` // [5s]
	ReadTimeout       time.Duration `mapstructure:"read_timeout"`        // [30s]
	WriteTimeout      time.Duration `mapstructure:"write_timeout"`       // [60s]
	IdleTimeout       time.Duration `mapstructure:"idle_timeout"`        // [120s]
	MaxHeaderBytes    int           `mapstructure:"max_header_bytes"`    // [32768]
	// MaxBodyBytes bounds request bodies (413 beyond); negative means
	// unlimited. [10 MiB]
	MaxBodyBytes    int64         `mapstructure:"max_body_bytes"`
	ShutdownTimeout time.Duration `mapstructure:"shutdown_timeout"` // [25s]
}

// TLSConfig enables HTTPS on the proxy listener when both files are set.
type TLSConfig struct {
	CertFile string `mapstructure:"cert_file"`
	KeyFile  string `mapstructure:"key_file"`
}

// LogConfig selects the log output of cmd/idp-proxy.
type LogConfig struct {
	Format string `mapstructure:"format"` // json|text ["json"]
	Level  string `mapstructure:"level"`  // debug|info|warn|error ["info"]
}

// Default values.
const (
	DefaultListen              = "127.0.0.1:4180"
	DefaultMetricsListen       = "127.0.0.1:9180"
	DefaultUpstreamTimeout     = 30 * time.Second
	DefaultMaxIdleConnsPerHost = 64
	DefaultMaxBodyBytes        = 10 << 20
	DefaultUserHeader          = "X-Auth-Request-User"
	DefaultUsernameHeader      = "X-Auth-Request-Preferred-Username"
	DefaultEmailHeader         = "X-Auth-Request-Email"
	DefaultRolesHeader         = "X-Auth-Request-Roles"
	PolicyAuthenticated        = "authenticated"
	PolicyDeny                 = "deny"
)

// DefaultConfig returns the configuration with every default set. The
// upstream URL and the idp section's server_url, realm and client_id have
// none.
func DefaultConfig() Config {
	return Config{
		Listen:        DefaultListen,
		MetricsListen: DefaultMetricsListen,
		Upstream: UpstreamConfig{
			Timeout:             DefaultUpstreamTimeout,
			MaxIdleConnsPerHost: DefaultMaxIdleConnsPerHost,
		},
		IDP: IDPConfig{
			TokenLocation: "header",
			CookieName:    idp.DefaultCookieName,
			AuthPrefix:    idp.DefaultAuthPrefix,
			JWKSCacheTTL:  idp.DefaultJWKSCacheTTL,
			Algorithms:    []string{"RS256"},
			HTTPTimeout:   idp.DefaultHTTPTimeout,
			Leeway:        idp.DefaultLeeway,
		},
		DefaultPolicy: PolicyAuthenticated,
		Headers: HeadersConfig{
			ForwardToken:      true,
			User:              DefaultUserHeader,
			PreferredUsername: DefaultUsernameHeader,
			Email:             DefaultEmailHeader,
			Roles:             DefaultRolesHeader,
		},
		Server: ServerConfig{
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       30 * time.Second,
			WriteTimeout:      60 * time.Second,
			IdleTimeout:       120 * time.Second,
			MaxHeaderBytes:    32 << 10,
			MaxBodyBytes:      DefaultMaxBodyBytes,
			ShutdownTimeout:   25 * time.Second,
		},
		Log: LogConfig{Format: "json", Level: "info"},
	}
}

// withDefaults fills zero fields whose zero value has no meaning.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
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
	setStr(&c.Listen, d.Listen)
	setDur(&c.Upstream.Timeout, d.Upstream.Timeout)
	if c.Upstream.MaxIdleConnsPerHost == 0 {
		c.Upstream.MaxIdleConnsPerHost = d.Upstream.MaxIdleConnsPerHost
	}
	setStr(&c.IDP.TokenLocation, d.IDP.TokenLocation)
	setStr(&c.IDP.AuthPrefix, d.IDP.AuthPrefix)
	setStr(&c.DefaultPolicy, d.DefaultPolicy)
	setDur(&c.Server.ReadHeaderTimeout, d.Server.ReadHeaderTimeout)
	setDur(&c.Server.ReadTimeout, d.Server.ReadTimeout)
	setDur(&c.Server.WriteTimeout, d.Server.WriteTimeout)
	setDur(&c.Server.IdleTimeout, d.Server.IdleTimeout)
	setDur(&c.Server.ShutdownTimeout, d.Server.ShutdownTimeout)
	if c.Server.MaxHeaderBytes == 0 {
		c.Server.MaxHeaderBytes = d.Server.MaxHeaderBytes
	}
	if c.Server.MaxBodyBytes == 0 {
		c.Server.MaxBodyBytes = d.Server.MaxBodyBytes
	}
	setStr(&c.Log.Format, d.Log.Format)
	setStr(&c.Log.Level, d.Log.Level)
	c.DefaultPolicy = strings.ToLower(c.DefaultPolicy)
	c.IDP.AuthPrefix = "/" + strings.Trim(c.IDP.AuthPrefix, "/")
	return c
}

// validate reports the problems of c that idp.New and the rule compiler do
// not see. Every error is prefixed "proxy: " and names its key.
func (c Config) validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("proxy: "+format, args...))
	}
	if c.Upstream.URL == "" {
		bad("upstream.url is required")
	} else if u, err := url.Parse(c.Upstream.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		bad("upstream.url %q: want http(s)://host[:port][/path], without user info, query or fragment", c.Upstream.URL)
	}
	if c.Upstream.Timeout < 0 {
		bad("upstream.timeout must not be negative, got %s", c.Upstream.Timeout)
	}
	if c.Upstream.MaxIdleConnsPerHost < 0 {
		bad("upstream.max_idle_conns_per_host must not be negative, got %d", c.Upstream.MaxIdleConnsPerHost)
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		bad("listen %q: want host:port (%v)", c.Listen, err)
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			bad("metrics_listen %q: want host:port, or \"\" to disable (%v)", c.MetricsListen, err)
		} else if _, port, _ := net.SplitHostPort(c.Listen); c.MetricsListen == c.Listen && port != "0" {
			bad("metrics_listen must differ from listen (%s)", c.Listen)
		}
	}
	switch c.DefaultPolicy {
	case PolicyAuthenticated, PolicyDeny:
	default:
		bad("default_policy %q: want authenticated or deny", c.DefaultPolicy)
	}
	switch strings.ToLower(c.IDP.TokenLocation) {
	case "header", "cookie":
	default:
		bad("idp.token_location %q: want header or cookie", c.IDP.TokenLocation)
	}
	if c.IDP.ClientSecret != "" && c.IDP.ClientSecretFile != "" {
		bad("idp.client_secret and idp.client_secret_file are exclusive: set one")
	}
	if c.IDP.SessionSecret != "" && c.IDP.SessionSecretFile != "" {
		bad("idp.session_secret and idp.session_secret_file are exclusive: set one")
	}
	if c.IDP.Leeway < 0 {
		bad("idp.leeway must not be negative, got %s", c.IDP.Leeway)
	}
	for _, p := range c.IDP.ExcludedPaths {
		if reason := checkPath(p); reason != "" {
			bad("idp.excluded_paths: %q: %s", p, reason)
		}
	}
	if reason := checkPath(c.IDP.AuthPrefix); reason != "" {
		bad("idp.auth_prefix %q: %s", c.IDP.AuthPrefix, reason)
	} else if c.IDP.IncludeRoutes && c.IDP.AuthPrefix == "/" {
		bad("idp.auth_prefix must not be \"/\" when include_routes is true: it would hide the upstream")
	}
	errs = append(errs, c.Headers.validate()...)
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		bad("tls.cert_file and tls.key_file go together: set both or neither")
	}
	switch strings.ToLower(c.Log.Format) {
	case "json", "text":
	default:
		bad("log.format %q: want json or text", c.Log.Format)
	}
	switch strings.ToLower(c.Log.Level) {
	case "debug", "info", "warn", "error":
	default:
		bad("log.level %q: want debug, info, warn or error", c.Log.Level)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"server.read_header_timeout", c.Server.ReadHeaderTimeout},
		{"server.read_timeout", c.Server.ReadTimeout},
		{"server.write_timeout", c.Server.WriteTimeout},
		{"server.idle_timeout", c.Server.IdleTimeout},
		{"server.shutdown_timeout", c.Server.ShutdownTimeout},
	} {
		if d.v < 0 {
			bad("%s must not be negative, got %s", d.name, d.v)
		}
	}
	if c.Server.MaxHeaderBytes < 0 {
		bad("server.max_header_bytes must not be negative, got %d", c.Server.MaxHeaderBytes)
	}
	return errors.Join(errs...)
}

// PluginConfig translates the idp section into an idp.Config, reading the
// secret files. Logger, HTTPClient and the other Go-only fields are left
// for the caller.
func (c Config) PluginConfig() (idp.Config, error) {
	secret, err := secretValue("idp.client_secret", c.IDP.ClientSecret, c.IDP.ClientSecretFile)
	if err != nil {
		return idp.Config{}, err
	}
	session, err := secretValue("idp.session_secret", c.IDP.SessionSecret, c.IDP.SessionSecretFile)
	if err != nil {
		return idp.Config{}, err
	}
	leeway := c.IDP.Leeway
	if leeway == 0 {
		leeway = -1 // explicitly none: idp reads 0 as "default"
	}
	ic := idp.Config{
		ServerURL:         c.IDP.ServerURL,
		Realm:             c.IDP.Realm,
		ClientID:          c.IDP.ClientID,
		ClientSecret:      secret,
		TokenLocation:     idp.TokenLocation(strings.ToUpper(c.IDP.TokenLocation)),
		CookieName:        c.IDP.CookieName,
		IncludeRoutes:     c.IDP.IncludeRoutes,
		RedirectURI:       c.IDP.RedirectURI,
		AuthPrefix:        c.IDP.AuthPrefix,
		ExcludedPaths:     c.IDP.ExcludedPaths,
		Audience:          c.IDP.Audience,
		OptionalAudiences: c.IDP.OptionalAudiences,
		JWKSCacheTTL:      c.IDP.JWKSCacheTTL,
		Algorithms:        c.IDP.Algorithms,
		HTTPTimeout:       c.IDP.HTTPTimeout,
		Leeway:            leeway,
	}
	if session != "" {
		ic.SessionSecret = []byte(session)
	}
	return ic, nil
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
