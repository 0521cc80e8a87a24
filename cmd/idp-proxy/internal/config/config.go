package config

import (
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

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
	// Upstreams are several apps, each chosen by host (and optionally
	// path); exclusive with upstream.url. [none]
	Upstreams []proxy.UpstreamRoute `mapstructure:"upstreams"`
	IDP       IDP                   `mapstructure:"idp"`
	// Routes are the rules, matched as http.ServeMux patterns.
	Routes []proxy.RouteConfig `mapstructure:"routes"`
	// DefaultPolicy applies to requests no rule matches: "authenticated"
	// (any valid token) or "deny" (403). ["authenticated"]
	DefaultPolicy string `mapstructure:"default_policy"`
	// ExtensionMethods are methods outside IANA's HTTP Method Registry
	// that rules may name; a rule on another unregistered method is a
	// load error. [none]
	ExtensionMethods []string `mapstructure:"extension_methods"`

	Headers proxy.HeadersConfig `mapstructure:"headers"`
	Server  Server              `mapstructure:"server"`
	TLS     TLS                 `mapstructure:"tls"`
	Log     Log                 `mapstructure:"log"`
	Session Session             `mapstructure:"session"`
	// ForwardAuth gives verdicts to an ingress.
	ForwardAuth ForwardAuth `mapstructure:"forward_auth"`
	// Tracing exports OpenTelemetry spans. [off]
	Tracing Tracing `mapstructure:"tracing"`
	// SkipAuthPreflight lets CORS preflights through to the upstream
	// without a token, on the routes without a cors policy of their own
	// (the proxy answers those of routes[].cors itself). [false]
	SkipAuthPreflight bool `mapstructure:"skip_auth_preflight"`
	// Pages are the look of the HTML pages browsers get for refusals
	// and errors. [the built-in page]
	Pages Pages `mapstructure:"pages"`
	// Assertion configures the assertions of the upstreams whose
	// credential is assertion (see proxy.AssertionConfig).
	Assertion proxy.AssertionConfig `mapstructure:"assertion"`
	// ClientCert reads the client certificate an ingress that terminated
	// TLS passes in a header (see proxy.ClientCertConfig). [none]
	ClientCert proxy.ClientCertConfig `mapstructure:"client_cert"`

	// fromEnv maps the keys Load took from the environment to their
	// variables, so that Check's errors can name the variable.
	fromEnv map[string]string
	// source is the file Load read, for the errors; noFile says that
	// Load was given none.
	source string
	noFile bool
	// doc and path are the parsed file Load read (nil, "" without one),
	// for the line numbers of Compile's errors (see locate).
	doc  *yaml.Node
	path string
}

// IDP holds every idp.Config option under its specification name.
type IDP struct {
	// IssuerURL is any OpenID Connect provider's issuer, exactly as its
	// tokens carry it; it excludes ServerURL and Realm, the Keycloak
	// shorthand (issuer ServerURL/realms/Realm). One of the two forms is
	// required.
	IssuerURL         string        `mapstructure:"issuer_url"`
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
	// UnknownKIDWait bounds how long a token with an unknown kid waits
	// for the key-set fetch it starts or joins (then 503). [500ms]
	UnknownKIDWait time.Duration `mapstructure:"unknown_kid_wait"`
	// FirstKeysWait bounds how long a request arriving before the first
	// key set waits for it, while the first fetch is under way (then
	// 503). [5s]
	FirstKeysWait time.Duration `mapstructure:"first_keys_wait"`
	// Leeway is the clock skew tolerated; a written 0 is none
	// (idp.Config.NoLeeway). [10s]
	Leeway time.Duration `mapstructure:"leeway"`
	// VerifiedCache turns the cache of verified tokens on. [true]
	VerifiedCache bool `mapstructure:"verified_cache"`
	// VerifiedCacheSize bounds that cache. A written 0 is the former
	// spelling of verified_cache: false, still accepted with a
	// deprecation warning. [10000]
	VerifiedCacheSize int `mapstructure:"verified_cache_size"`
	// Claims says where the identity is read from a token.
	Claims Claims `mapstructure:"claims"`
	// IssuerName names the primary issuer (the one above) in
	// routes[].issuers, the access log and the metrics. ["default"]
	IssuerName string `mapstructure:"issuer_name"`
	// Issuers are further trusted issuers whose bearer tokens are
	// accepted too. [none]
	Issuers []Issuer `mapstructure:"issuers"`
	// AllowedRedirectHosts are the other hosts return_to and rd may name
	// (idp.Config.AllowedRedirectHosts). [none]
	AllowedRedirectHosts []string `mapstructure:"allowed_redirect_hosts"`
	// DPoP is proof of possession for DPoP-bound tokens (see DPoP).
	DPoP DPoP `mapstructure:"dpop"`
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
	// H2C accepts HTTP/2 without TLS (prior knowledge: gRPC clients on
	// plain connections) besides HTTP/1.1 on the proxy's listener. With
	// TLS, HTTP/2 is always offered. [false]
	H2C bool `mapstructure:"h2c"`
}

// TLS enables HTTPS on the proxy listener: with certificate files when
// both are set, or with certificates obtained by ACME (exclusive).
type TLS struct {
	CertFile string `mapstructure:"cert_file"`
	KeyFile  string `mapstructure:"key_file"`
	// MinVersion is the oldest TLS version accepted: "1.2" or "1.3".
	// ["1.2"]
	MinVersion string `mapstructure:"min_version"`
	// ACME obtains and renews the certificates automatically. [off]
	ACME ACME `mapstructure:"acme"`
	// ClientAuth asks TLS clients for certificates (mutual TLS): "none",
	// "request" (verified when sent) or "require" (no handshake without
	// one); see ClientAuthNone. ["none"]
	ClientAuth string `mapstructure:"client_auth"`
	// ClientCAFile is a PEM bundle of the CAs client certificates must
	// chain to; required with client_auth request or require. [none]
	ClientCAFile string `mapstructure:"client_ca_file"`
}

// Enabled reports whether the proxy listener serves HTTPS.
func (t TLS) Enabled() bool { return t.CertFile != "" || t.ACME.Enabled() }

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

// Default returns the file's defaults: pkg/idp's (idp.Config{}.WithDefaults,
// its session defaults included) and pkg/proxy's (proxy.DefaultConfig),
// which own them, and those of the program's own sections. The upstream
// URL and the idp section's issuer_url, server_url, realm and client_id
// have none.
func Default() File {
	pd := proxy.DefaultConfig()
	id := idp.Config{Session: &idp.SessionConfig{}}.WithDefaults()
	return File{
		Listen:        DefaultListen,
		MetricsListen: DefaultMetricsListen,
		Upstream:      pd.Upstream,
		IDP: IDP{
			TokenLocation: strings.ToLower(string(id.TokenLocation)),
			CookieName:    id.CookieName,
			AuthPrefix:    id.AuthPrefix,
			JWKSCacheTTL:  id.JWKSCacheTTL,
			Algorithms:    id.Algorithms,
			HTTPTimeout:   id.HTTPTimeout,
			Leeway:        id.Leeway,

			UnknownKIDWait: id.UnknownKIDWait,
			FirstKeysWait:  id.FirstKeysWait,

			VerifiedCache:     !id.DisableVerifiedCache,
			VerifiedCacheSize: id.VerifiedCacheSize,
			Claims:            Claims{Preset: string(idp.PresetKeycloak)},
			IssuerName:        id.IssuerName,
			DPoP:              defaultDPoP(),
		},
		DefaultPolicy:    pd.DefaultPolicy,
		ExtensionMethods: []string{},
		Headers:          pd.Headers,
		// internal/server applies the same values to zero timeouts and
		// sizes; it exports none, so they are written here, once.
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
		TLS:         TLS{MinVersion: "1.2", ClientAuth: ClientAuthNone, ACME: ACME{Domains: []string{}, DirectoryURL: DefaultACMEDirectory, Cache: ACMECacheDir}},
		Log:         Log{Format: "json", Level: "info"},
		ForwardAuth: ForwardAuth{TrustedCIDRs: []string{}},
		Tracing:     Tracing{TrustedCIDRs: []string{}},
		Assertion:   pd.Assertion,
		ClientCert:  proxy.ClientCertConfig{TrustedCIDRs: []string{}},
		Session: Session{
			Store:                StoreCookie,
			CookieName:           id.Session.CookieName,
			MaxAge:               id.Session.MaxAge,
			RefreshMargin:        id.Session.RefreshMargin,
			RefreshWait:          id.Session.RefreshWait,
			DPoPAcceptedKeyFiles: []string{},
		},
	}
}

// VerifiedCacheEntries is the number of entries the verified-token cache
// may hold: idp.verified_cache_size, or 0 when the cache is off.
func (i IDP) VerifiedCacheEntries() int {
	if !i.VerifiedCache || i.VerifiedCacheSize <= 0 {
		return 0
	}
	return i.VerifiedCacheSize
}
