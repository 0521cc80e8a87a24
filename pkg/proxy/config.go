package proxy

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Config is what the proxy itself uses: the upstream, the rules, the
// default policy, the identity headers and the body limit. The identity
// provider is configured on the *idp.Plugin given to New; listeners, TLS
// and logging belong to the program that serves the proxy (cmd/idp-proxy
// reads them all from one YAML file). Start from DefaultConfig; New fills
// zero durations and sizes with their defaults, while strings whose empty
// value has a meaning (header names: "" disables the header) and booleans
// are taken as given.
//
// The mapstructure and yaml tags give each field its key in idp-proxy's
// configuration file.
type Config struct {
	Upstream UpstreamConfig `mapstructure:"upstream"`
	// Upstreams are several apps behind one proxy, each chosen by host
	// (and optionally path); exclusive with Upstream.URL, whose section
	// then gives the transport defaults. A request for a host none of
	// them names is answered 421 and never forwarded. [none]
	Upstreams []UpstreamRoute `mapstructure:"upstreams"`
	// Routes are the rules, matched as http.ServeMux patterns.
	Routes []RouteConfig `mapstructure:"routes"`
	// DefaultPolicy applies to requests no rule matches: "authenticated"
	// (any valid token) or "deny" (403). ["authenticated"]
	DefaultPolicy string `mapstructure:"default_policy"`
	// ExtensionMethods are request methods outside IANA's HTTP Method
	// Registry (GET, POST, PROPFIND, QUERY, ...) that rules may name: a rule on any
	// other unregistered method (a typo such as GETT) is a load error.
	// Upper-case tokens. [none]
	ExtensionMethods []string      `mapstructure:"extension_methods"`
	Headers          HeadersConfig `mapstructure:"headers"`
	// MaxBodyBytes bounds request bodies (413 beyond); negative means
	// unlimited. [10 MiB] (server.max_body_bytes in idp-proxy's file)
	MaxBodyBytes int64
	// SkipAuthPreflight forwards CORS preflights (OPTIONS with Origin and
	// Access-Control-Request-Method) to the upstream without a token, so
	// that the upstream answers them (a browser sends no credentials with
	// a preflight). Like oauth2-proxy's skip_auth_preflight. It is the
	// default of the routes without a policy of their own: the preflights
	// of a route with RouteConfig.CORS are answered by the proxy, without
	// a token, whatever this says. [false]
	SkipAuthPreflight bool `mapstructure:"skip_auth_preflight"`
	// ForwardAuth serves verdicts to an ingress (nginx auth_request,
	// Traefik forwardAuth, Caddy forward_auth). With it, Upstream.URL may
	// be empty: the proxy then forwards nothing (forward-auth only).
	ForwardAuth ForwardAuthConfig `mapstructure:"-"`
	// Assertion configures the assertions of the upstreams whose
	// credential is "assertion".
	Assertion AssertionConfig `mapstructure:"assertion"`
	// ClientCert reads client certificates an ingress passes in a header.
	ClientCert ClientCertConfig `mapstructure:"client_cert"`
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
	// IdleTimeout closes a keep-alive connection to the upstream after it
	// has been idle this long. Keep it below the upstream's own keep-alive
	// timeout (5 s for Node.js and Apache): a request forwarded on a
	// connection the upstream is closing fails, and Go's transport does
	// not retry a POST, so the client would get 502. Busy connections are
	// never idle that long. [4s]
	IdleTimeout time.Duration `mapstructure:"idle_timeout"`
	// CAFile is a PEM file of the certificate authorities an https
	// upstream's certificate is checked against. [the system's roots]
	CAFile string `mapstructure:"ca_file"`
	// ClientCertFile and ClientKeyFile are a PEM certificate and key the
	// proxy presents to an https upstream that asks for one (mutual
	// TLS). Set both or neither. [none]
	ClientCertFile string `mapstructure:"client_cert_file"`
	ClientKeyFile  string `mapstructure:"client_key_file"`
	// Protocol is how the proxy speaks to the upstream: "http1"
	// (HTTP/1.1 only), "h2" (HTTP/2 over TLS only: an https URL), "h2c"
	// (HTTP/2 without TLS, prior knowledge: an http URL, as gRPC
	// servers listen), or "auto" (HTTP/2 when an https upstream offers
	// it, else HTTP/1.1). gRPC needs h2 or h2c (or auto on https). In
	// upstreams[], "" takes the upstream section's. ["auto"]
	Protocol string `mapstructure:"protocol"`
	// StreamTimeout bounds a gRPC call (a request whose Content-Type is
	// application/grpc...): for it, the server's read and write timeouts
	// and Timeout are replaced by this limit on the whole call, so that
	// long streams are not cut; past it the call ends. [1h]
	StreamTimeout time.Duration `mapstructure:"stream_timeout"`
	// Credential is what the upstream receives as the caller's
	// credential: "forward" (the caller's token, as headers.forward_token
	// says), "none" (identity headers only), "assertion" (a JWT the
	// proxy signs for this upstream, see AssertionConfig), "exchange"
	// (a token the provider issues for Audience and Scopes in exchange
	// for the caller's, RFC 8693) or "client_credentials" (the proxy's
	// own token for Audience and Scopes, with the caller's identity in
	// the assertion when assertion keys are configured, and the identity
	// headers). exchange and client_credentials need idp.client_secret.
	// With every mode but forward the caller's token reaches the upstream
	// in no header and no cookie. Upstreams inherit the upstream
	// section's. ["forward"]
	Credential string `mapstructure:"credential"`
	// Audience is the upstream's name at its issuer: the aud of its
	// assertions (credential assertion, and client_credentials with
	// assertion keys), the audience parameter of the token exchange
	// (exchange: with Keycloak, the upstream's client ID) and of the
	// client-credentials request (which Keycloak ignores: see the
	// README). [assertion: the match pattern's host (and path), the
	// single upstream's URL; exchange and client_credentials: none sent]
	Audience string `mapstructure:"audience"`
	// Scopes are the scope parameter of the token exchange or the
	// client-credentials request (exchange and client_credentials only).
	// [none: the provider's default scopes]
	Scopes []string `mapstructure:"scopes"`
}

// Upstream protocols (UpstreamConfig.Protocol).
const (
	ProtocolAuto  = "auto"
	ProtocolHTTP1 = "http1"
	ProtocolH2    = "h2"
	ProtocolH2C   = "h2c"
)

// RouteConfig is one rule. With none of Public, Roles, ClientRoles,
// Scopes, Groups, Claims and EmailDomains, the rule admits any valid
// token.
type RouteConfig struct {
	// Match is an http.ServeMux pattern: "[METHOD ][HOST]/[PATH]".
	Match string `mapstructure:"match" yaml:"match"`
	// Public serves the route without a token. A valid token, when sent,
	// is still verified and its identity forwarded; an invalid one is
	// dropped.
	Public bool `mapstructure:"public" yaml:"public"`
	// Roles are the roles the claim mapping reads (idp.User.RealmRoles:
	// realm_access.roles with the Keycloak preset).
	Roles []string `mapstructure:"roles" yaml:"roles"`
	// ClientRoles are roles by client ID (resource_access.<client>.roles).
	ClientRoles map[string][]string `mapstructure:"client_roles" yaml:"client_roles"`
	// Scopes are scopes of the token's scope claim (or the claim the
	// mapping names).
	Scopes []string `mapstructure:"scopes" yaml:"scopes"`
	// Groups are the groups the claim mapping reads (idp.User.Groups).
	Groups []string `mapstructure:"groups" yaml:"groups"`
	// Claims are rules on any claim: a claim path (see idp.ClaimPath) and
	// the values accepted for it, strings, booleans or numbers compared
	// exactly with their type (idp.NewClaimsGuard): {"tid": {"t1"}}. A
	// claim that is an array matches when one of its elements does.
	Claims map[string][]any `mapstructure:"claims" yaml:"claims"`
	// EmailDomains admits a user whose e-mail address is in one of the
	// domains, exactly (no subdomains), and only when the token's
	// email_verified is true (idp.NewEmailDomainsGuard). The domains are
	// always alternatives: Strategy does not apply.
	EmailDomains []string `mapstructure:"email_domains" yaml:"email_domains"`
	// Strategy is "all" (default) or "any", for each of Roles, every
	// client's ClientRoles, Scopes, Groups and Claims (across the claim
	// paths; a path's values are always alternatives).
	Strategy string `mapstructure:"strategy" yaml:"strategy"`
	// Issuers are the names of the trusted issuers whose tokens the rule
	// accepts (idp.issuer_name, "default" unless set, and the names of
	// idp.issuers); a token of any other is refused with 403. Unknown
	// names are load errors. [every trusted issuer]
	Issuers []string `mapstructure:"issuers" yaml:"issuers"`
	// CORS is the route's cross-origin policy: the proxy answers its
	// preflights and sets the CORS headers of its answers. [none: see
	// Config.SkipAuthPreflight]
	CORS CORSConfig `mapstructure:"cors" yaml:"cors"`
	// ClientCert requires a verified client certificate matching it, with
	// a token or instead of one (see ClientCertRule). [none]
	ClientCert *ClientCertRule `mapstructure:"client_cert" yaml:"client_cert"`
	// DPoP is the rule's DPoP mode (RFC 9449): "off" (bearer tokens only),
	// "allowed" (bearer tokens, and DPoP-bound tokens with their proof) or
	// "required" (only DPoP-bound tokens with their proof). A token bound
	// to a key or certificate is checked in every mode. [idp.dpop.mode]
	DPoP string `mapstructure:"dpop" yaml:"dpop"`
}

// HeadersConfig names the identity headers sent upstream. An empty name
// disables that header (the client's copies are stripped all the same).
// Values arrive exactly as verified: one HTTP would alter is sent as an
// RFC 2047 encoded-word (see the README, "Upstream headers").
type HeadersConfig struct {
	// ForwardToken sends the verified raw token upstream as
	// Authorization: Bearer; when false, Authorization is never forwarded.
	// [true]
	ForwardToken bool `mapstructure:"forward_token"`
	// User carries the sub claim. ["X-Auth-Request-User"]
	User string `mapstructure:"user"`
	// PreferredUsername carries the username (preferred_username, or
	// what idp.claims.username names).
	// ["X-Auth-Request-Preferred-Username"]
	PreferredUsername string `mapstructure:"preferred_username"`
	// Email carries email, only when the token's email_verified claim is
	// true. ["X-Auth-Request-Email"]
	Email string `mapstructure:"email"`
	// Roles carries the roles (realm roles, or what idp.claims.roles
	// names), comma-separated. ["X-Auth-Request-Roles"]
	Roles string `mapstructure:"roles"`
	// TrustForwarded keeps the client's X-Forwarded-For (appending the
	// peer's address), X-Forwarded-Host, X-Forwarded-Proto and Forwarded.
	// Only behind a trusted load balancer. [false]
	TrustForwarded bool `mapstructure:"trust_forwarded"`
	// Claims maps a header name to a claim path (see idp.ClaimPath):
	// {"X-Auth-Request-Tenant": "tid", "X-Auth-Request-Groups": "groups"}.
	// The header carries the claim's values (a string, boolean or number,
	// or an array of them; numbers in idp.CanonicalNumber's form),
	// comma-separated and each encoded as the roles header's elements
	// are; it is not sent when the claim is absent, empty, or of another
	// shape. Every spelling of these headers is stripped from the
	// client's request. [none]
	Claims map[string]string `mapstructure:"claims" yaml:"claims"`
}

// Default values.
const (
	DefaultUpstreamTimeout     = 30 * time.Second
	DefaultMaxIdleConnsPerHost = 64
	DefaultUpstreamIdleTimeout = 4 * time.Second
	DefaultStreamTimeout       = time.Hour
	DefaultMaxBodyBytes        = 10 << 20
	DefaultUserHeader          = "X-Auth-Request-User"
	DefaultUsernameHeader      = "X-Auth-Request-Preferred-Username"
	DefaultEmailHeader         = "X-Auth-Request-Email"
	DefaultRolesHeader         = "X-Auth-Request-Roles"
	PolicyAuthenticated        = "authenticated"
	PolicyDeny                 = "deny"
)

// DefaultConfig returns the configuration with every default set. The
// upstream URL has none.
func DefaultConfig() Config {
	return Config{
		Upstream: UpstreamConfig{
			Timeout:             DefaultUpstreamTimeout,
			MaxIdleConnsPerHost: DefaultMaxIdleConnsPerHost,
			IdleTimeout:         DefaultUpstreamIdleTimeout,
			StreamTimeout:       DefaultStreamTimeout,
			Protocol:            ProtocolAuto,
			Credential:          CredentialForward,
		},
		DefaultPolicy: PolicyAuthenticated,
		Headers: HeadersConfig{
			ForwardToken:      true,
			User:              DefaultUserHeader,
			PreferredUsername: DefaultUsernameHeader,
			Email:             DefaultEmailHeader,
			Roles:             DefaultRolesHeader,
		},
		MaxBodyBytes: DefaultMaxBodyBytes,
		Assertion:    AssertionConfig{}.withDefaults(),
	}
}

// withDefaults fills zero fields whose zero value has no meaning.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Upstream.Timeout == 0 {
		c.Upstream.Timeout = d.Upstream.Timeout
	}
	if c.Upstream.MaxIdleConnsPerHost == 0 {
		c.Upstream.MaxIdleConnsPerHost = d.Upstream.MaxIdleConnsPerHost
	}
	if c.Upstream.IdleTimeout == 0 {
		c.Upstream.IdleTimeout = d.Upstream.IdleTimeout
	}
	if c.Upstream.StreamTimeout == 0 {
		c.Upstream.StreamTimeout = d.Upstream.StreamTimeout
	}
	if c.DefaultPolicy == "" {
		c.DefaultPolicy = d.DefaultPolicy
	}
	c.DefaultPolicy = strings.ToLower(c.DefaultPolicy)
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = d.MaxBodyBytes
	}
	c.Assertion = c.Assertion.withDefaults()
	return c
}

// validate reports the problems of c that the rule compiler does not see.
// Every error is a *FieldError.
func (c Config) validate() error {
	var errs []error
	bad := func(k []string, format string, args ...any) {
		errs = append(errs, fieldErrorf(k, format, args...))
	}
	if c.Upstream.URL == "" && len(c.Upstreams) == 0 {
		if !c.ForwardAuth.Enabled {
			errs = append(errs, missingFieldf(fields("Upstream.URL", "ForwardAuth.Enabled"), "%s is required (or %s: several apps; or %s: forward-auth only)",
				named("Upstream.URL"), named("Upstreams"), named("ForwardAuth.Enabled")))
		}
	}
	errs = append(errs, c.Upstream.validate("Upstream.")...)
	switch c.DefaultPolicy {
	case PolicyAuthenticated, PolicyDeny:
	default:
		bad(fields("DefaultPolicy"), "%s %q: want authenticated or deny", named("DefaultPolicy"), c.DefaultPolicy)
	}
	errs = append(errs, c.Headers.validate("Headers")...)
	if err := checkCredential("Upstream.Credential", c.Upstream.Credential); err != nil {
		errs = append(errs, err)
	}
	if len(c.Upstreams) == 0 {
		errs = append(errs, checkTarget("Upstream.", c.Upstream)...)
	}
	errs = append(errs, c.Assertion.validate(c.usesAssertion())...)
	if c.assertionOptional() && c.Assertion.IssuerURL != "" && c.Assertion.KeyFile != "" && foldName(c.Assertion.Header) == "authorization" {
		bad(fields("Assertion.Header"), "%s Authorization: an upstream's credential (exchange or client_credentials) sends its token there; choose another header", named("Assertion.Header"))
	}
	return errors.Join(errs...)
}

// upstreamConfigs are the upstreams' settings, inherited; the upstream
// section alone without upstreams.
func (c Config) upstreamConfigs() []UpstreamConfig {
	if len(c.Upstreams) == 0 {
		return []UpstreamConfig{c.Upstream}
	}
	out := make([]UpstreamConfig, len(c.Upstreams))
	for i, u := range c.Upstreams {
		out[i] = u.Inherit(c.Upstream)
	}
	return out
}

// assertionOptional reports whether an upstream's credential sends the
// assertion when assertion keys are configured (client_credentials),
// or a token in Authorization (exchange, client_credentials).
func (c Config) assertionOptional() bool {
	for _, u := range c.upstreamConfigs() {
		if u.Credential == CredentialClientCredentials || u.Credential == CredentialExchange {
			return true
		}
	}
	return false
}

// usesAssertion reports whether an upstream's credential is assertion.
func (c Config) usesAssertion() bool {
	if len(c.Upstreams) == 0 {
		return c.Upstream.Credential == CredentialAssertion
	}
	for _, u := range c.Upstreams {
		if u.Inherit(c.Upstream).Credential == CredentialAssertion {
			return true
		}
	}
	return false
}

// validate reports the problems of an upstream's settings, their Go
// paths prefixed with prefix ("Upstream.", "Upstreams[2].").
func (u UpstreamConfig) validate(prefix string) []error {
	var errs []error
	bad := func(k []string, format string, args ...any) {
		errs = append(errs, fieldErrorf(k, format, args...))
	}
	// Whether a URL is required is the caller's to say.
	if u.URL == "" {
		return append(errs, u.validateTransport(prefix)...)
	}
	if pu, err := url.Parse(u.URL); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" || pu.User != nil || pu.RawQuery != "" || pu.Fragment != "" {
		bad(fields(prefix+"URL"), "%s %q: want http(s)://host[:port][/path], without user info, query or fragment", named(prefix+"URL"), u.URL)
	} else if u.Protocol == ProtocolH2 && pu.Scheme != "https" {
		bad(fields(prefix+"Protocol", prefix+"URL"), "%s h2 is HTTP/2 over TLS and needs an https %s (HTTP/2 without TLS is h2c), got %q", named(prefix+"Protocol"), leaf(prefix+"URL"), u.URL)
	} else if u.Protocol == ProtocolH2C && pu.Scheme != "http" {
		bad(fields(prefix+"Protocol", prefix+"URL"), "%s h2c is HTTP/2 without TLS and needs an http %s (over TLS it is h2), got %q", named(prefix+"Protocol"), leaf(prefix+"URL"), u.URL)
	} else if p := pu.Port(); p != "" || strings.HasSuffix(pu.Host, ":") {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			bad(fields(prefix+"URL"), "%s %q: port %q is not a TCP port (1-65535)", named(prefix+"URL"), u.URL, p)
		}
	}
	return append(errs, u.validateTransport(prefix)...)
}

// validateTransport reports the problems of an upstream's transport
// settings.
func (u UpstreamConfig) validateTransport(prefix string) []error {
	var errs []error
	bad := func(k []string, format string, args ...any) {
		errs = append(errs, fieldErrorf(k, format, args...))
	}
	if u.Timeout < 0 {
		bad(fields(prefix+"Timeout"), "%s must not be negative, got %s", named(prefix+"Timeout"), u.Timeout)
	}
	if u.MaxIdleConnsPerHost < 0 {
		bad(fields(prefix+"MaxIdleConnsPerHost"), "%s must not be negative, got %d", named(prefix+"MaxIdleConnsPerHost"), u.MaxIdleConnsPerHost)
	}
	if u.IdleTimeout < 0 {
		bad(fields(prefix+"IdleTimeout"), "%s must not be negative, got %s", named(prefix+"IdleTimeout"), u.IdleTimeout)
	}
	if u.StreamTimeout < 0 {
		bad(fields(prefix+"StreamTimeout"), "%s must not be negative, got %s", named(prefix+"StreamTimeout"), u.StreamTimeout)
	}
	switch u.Protocol {
	case "", ProtocolAuto, ProtocolHTTP1, ProtocolH2, ProtocolH2C:
	default:
		bad(fields(prefix+"Protocol"), "%s %q: want auto, http1, h2 (HTTP/2 over TLS) or h2c (HTTP/2 without TLS)", named(prefix+"Protocol"), u.Protocol)
	}
	if (u.ClientCertFile == "") != (u.ClientKeyFile == "") {
		bad(fields(prefix+"ClientCertFile", prefix+"ClientKeyFile"), "%s and %s go together: set both or neither", named(prefix+"ClientCertFile"), named(prefix+"ClientKeyFile"))
	}
	return errs
}
