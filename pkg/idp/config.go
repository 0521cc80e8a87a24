package idp

import (
	"errors"
	"fmt"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/idp-proxy/idp-proxy/internal/fielderr"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/authflow"
)

// TokenLocation says where the access token is read from.
type TokenLocation string

// Token locations. The zero value means TokenLocationHeader.
const (
	TokenLocationHeader TokenLocation = "HEADER" // Authorization: Bearer <token>
	TokenLocationCookie TokenLocation = "COOKIE" // the cookie Config.CookieName
)

// Defaults of Config, as in the specification.
const (
	DefaultCookieName                = "access_token"
	DefaultAuthPrefix                = "/auth"
	DefaultJWKSCacheTTL              = time.Hour
	DefaultHTTPTimeout               = 10 * time.Second
	DefaultLeeway                    = 10 * time.Second
	DefaultMaxTokenBytes             = 16 << 10
	DefaultUnknownKIDRefreshInterval = time.Second
	DefaultUnknownKIDWait            = 500 * time.Millisecond
	DefaultFirstKeysWait             = 5 * time.Second
	DefaultVerifiedCacheSize         = 10000
)

// supportedAlgorithms are the asymmetric JWS algorithms Config.Algorithms may
// name. Symmetric (HS*) algorithms and "none" are never accepted: a
// resource server holds no shared secret, and accepting HS* would let an
// attacker sign with the public key.
var supportedAlgorithms = map[string]bool{
	"RS256": true, "RS384": true, "RS512": true,
	"PS256": true, "PS384": true, "PS512": true,
	"ES256": true, "ES384": true, "ES512": true,
	"EdDSA": true,
}

// Config configures a Plugin. Fields follow the specification's IdpConfig
// one for one; the zero value of every optional field selects the default
// given in brackets.
type Config struct {
	// IssuerURL is the issuer of any OpenID Connect provider, exactly as
	// its discovery document and its tokens spell it (byte for byte,
	// trailing slash included), e.g. "https://example.okta.com" or
	// "https://login.microsoftonline.com/<tenant>/v2.0". Every endpoint
	// (authorization, token, end-session, revocation, JWKS) comes from
	// {IssuerURL}/.well-known/openid-configuration; none is guessed. When
	// set, ServerURL and Realm must be empty, and the realm of
	// WWW-Authenticate challenges is the issuer. [none: ServerURL and Realm]
	IssuerURL string
	// ServerURL is the Keycloak server's base URL without trailing slash,
	// e.g. "https://sso.example.com". Required with Realm unless
	// IssuerURL is set (the Keycloak shorthand).
	ServerURL string
	// Realm is the Keycloak realm name. Required with ServerURL unless
	// IssuerURL is set. The issuer is ServerURL + "/realms/" + Realm, and
	// endpoints the discovery document omits fall back to Keycloak's
	// paths under it.
	Realm string
	// ClientID is this application's OIDC client ID. Required.
	ClientID string
	// ClientSecret is the secret of a confidential client, used by the
	// /auth routes and service tokens. [none]
	ClientSecret string

	// TokenLocation says where tokens are read. [TokenLocationHeader]
	TokenLocation TokenLocation
	// CookieName is the cookie read when TokenLocation is COOKIE. ["access_token"]
	CookieName string

	// IncludeRoutes makes Routes serve login, callback, logout and refresh
	// under AuthPrefix. [false]
	IncludeRoutes bool
	// RedirectURI is the callback URL registered at the provider. Required
	// when IncludeRoutes.
	RedirectURI string
	// AuthPrefix is the path prefix of the /auth routes. ["/auth"]
	AuthPrefix string
	// AllowedRedirectHosts are the other hosts the login route may send
	// the browser back to after the sign-in (its return_to or rd as an
	// absolute URL): exact host names ("wiki.example.com", with a port
	// "wiki.example.com:8443" or any port "wiki.example.com:*") and
	// suffix patterns ("*.example.com": every subdomain, not example.com
	// itself). Over https (RedirectURI), only https targets. An entry
	// that can never match, and a pattern over a public suffix ("*.com"),
	// are configuration errors. [none: relative paths on the site of
	// RedirectURI only]
	AllowedRedirectHosts []string

	// ExcludedPaths skip authentication in Middleware; compared with
	// r.URL.Path by exact match. [none]
	ExcludedPaths []string

	// Audience is the expected aud claim. [ClientID]
	Audience string
	// OptionalAudiences are further accepted audiences, typically the
	// client IDs of services calling with client_credentials tokens. [none]
	OptionalAudiences []string

	// Claims says where the username, e-mail, roles, groups and scopes
	// are read from a token: a preset (Keycloak's claims, or a generic
	// provider's) and claim paths overriding it. [the Keycloak preset]
	Claims ClaimMapping

	// IssuerName names the primary issuer (the one IssuerURL, or ServerURL
	// and Realm, give) in User.IssuerName, RequireIssuers, logs and
	// metrics. The primary issuer is the one of browser sign-in, sessions,
	// the /auth routes and service tokens. ["default"]
	IssuerName string
	// Issuers are further trusted issuers whose bearer tokens are
	// accepted too, each with its own audiences, algorithms, claim
	// mapping and keys (see TrustedIssuer). [none]
	Issuers []TrustedIssuer

	// JWKSCacheTTL is how long fetched keys are used before a refresh. [1h]
	JWKSCacheTTL time.Duration
	// Algorithms are the accepted signature algorithms. [RS256]
	Algorithms []string
	// HTTPTimeout bounds every call to the provider. [10s]
	HTTPTimeout time.Duration

	// Go additions, all optional.

	// HTTPClient makes the calls to the provider. Its own Timeout is kept;
	// HTTPTimeout applies on top through the request context. Give its
	// transport an IdleConnTimeout shorter than the provider's keep-alive
	// timeout (5 s for Node.js and Apache): Go does not retry a POST to
	// the token endpoint sent on a connection the server is closing.
	// [a client with a dedicated transport, idle connections dropped
	// after 4 s]
	HTTPClient *http.Client
	// Logger receives the plugin's logs; tokens are never logged. [discard]
	Logger *slog.Logger
	// Leeway is the clock skew tolerated on exp, nbf and iat, unless
	// NoLeeway. [10s]
	Leeway time.Duration
	// NoLeeway tolerates no clock skew: Leeway is not used. A negative
	// Leeway, the former spelling of "none", still means it (New logs a
	// deprecation warning) and stays negative in Plugin.Config. [false]
	NoLeeway bool
	// Now returns the current time for claim checks. [time.Now]
	Now func() time.Time
	// MaxTokenBytes rejects longer tokens before any parsing. [16 KiB]
	MaxTokenBytes int
	// UnknownKIDRefreshInterval is the least time between two key-set
	// refetches caused by tokens with an unknown kid, per plugin. A flood
	// of random kids therefore costs the provider at most one request per
	// interval, and a genuine key rotation is picked up within one
	// interval (a fetch is scheduled for the end of the interval whenever
	// the budget was spent); a kid found absent is not fetched for again
	// for five intervals. [1s]
	UnknownKIDRefreshInterval time.Duration
	// UnknownKIDWait bounds how long a request whose token has an unknown
	// kid waits for the key-set fetch it starts or joins. A provider that
	// hangs (rather than refusing connections) would otherwise hold such
	// requests for HTTPTimeout; past this wait they answer 503 with
	// Retry-After ("the identity provider did not send its keys in
	// time"), and the fetch goes on in the background for the requests
	// that follow. Tokens with a known kid never wait. [500ms]
	UnknownKIDWait time.Duration
	// FirstKeysWait bounds how long a request that arrives before the
	// provider's first key set (New starts fetching it: discovery, then
	// the JWKS) waits for it, within the request's context, so that the
	// first requests after New are served rather than answered 503. The
	// wait ends as soon as that first fetch ends: a provider that is down
	// at start fails it at once, and every request then gets 503 with
	// Retry-After without waiting, until a background retry loads the
	// keys. Past the wait (a provider that does not answer), 503 "the
	// identity provider did not send its keys in time". WaitReady blocks
	// for the keys without a bound. Negative: never wait. [5s]
	FirstKeysWait time.Duration
	// VerifiedCacheSize bounds the cache of verified tokens (keyed by the
	// SHA-256 of the token's signing input and its signature, never used
	// past the token's exp, dropped when the key set changes; an entry is
	// the verified payload and the signature, not the decoded identity).
	// A table of the 256 tokens presented most recently sits in front of
	// it (and goes with it). [10000]
	VerifiedCacheSize int
	// DisableVerifiedCache turns that cache and the table in front of it
	// off: every presentation of a token is verified in full. A negative
	// VerifiedCacheSize, the former spelling, still does (New logs a
	// deprecation warning). [false: the cache is on]
	DisableVerifiedCache bool

	// SessionSecret seals the login-state and session cookies of the /auth
	// routes (AES-GCM). At least 32 bytes; required when IncludeRoutes.
	// A sealed cookie is bound to the deployment: it opens only under the
	// same session cookie domain (or RedirectURI host), issuer and
	// ClientID, whatever else shares the secret.
	SessionSecret []byte
	// Scopes requested by the login route; "openid" is always included.
	// ["openid", "profile", "email"]
	Scopes []string

	// Session turns on browser sessions: the callback starts a session
	// and redirects back instead of answering the token document, a
	// request without a bearer token is judged with its session's access
	// token (refreshed before it expires), a browser navigation without
	// credentials is sent to the login route, and logout ends the session
	// at the provider too. Needs IncludeRoutes. nil: the API mode of the
	// specification. [nil]
	Session *SessionConfig

	// Pages are the HTML pages browser navigations get for refusals and
	// errors, from NewPages: a template of the deployment's own, or the
	// built-in page with its logo, name and colours. [nil: the built-in
	// page]
	Pages *Pages

	// TracerProvider records OpenTelemetry spans: idp.authorize around
	// Middleware, Require, Authenticate and the With* adapters (issuer,
	// cache hit or miss, outcome), idp.jwks.fetch for every key-set fetch,
	// idp.token.exchange for the callback's code exchange and
	// idp.token.refresh for every refresh. A span never carries a token, a
	// cookie, a query string or a claim value. [nil: no spans, at no cost]
	TracerProvider trace.TracerProvider

	// SessionEnded is told of every logout the /auth routes carry out, so
	// that what was derived from the session's tokens (exchanged tokens,
	// see package exchange) is forgotten with it: a back-channel logout
	// token's sid (then sub is "") or, naming no sid, its sub; a sign-out
	// of a session (Session mode), its provider sid, or its sub when it
	// has none. It must not block. [nil]
	SessionEnded func(sid, sub string)

	// DPoP is proof of possession (RFC 9449) for DPoP-bound tokens; see
	// DPoPConfig. [mode Off: bearer tokens only]
	DPoP DPoPConfig
}

// Issuer returns the issuer URL tokens must carry: IssuerURL when set,
// else the realm's, ServerURL + "/realms/" + Realm.
func (c Config) Issuer() string {
	if c.IssuerURL != "" {
		return c.IssuerURL
	}
	return strings.TrimRight(c.ServerURL, "/") + "/realms/" + url.PathEscape(c.Realm)
}

// challengeRealm is the realm of WWW-Authenticate challenges (RFC 6750
// §3): the Keycloak realm's name, or with IssuerURL the issuer itself,
// which names the provider a client must get its token from.
func (c Config) challengeRealm() string {
	if c.IssuerURL != "" {
		return c.IssuerURL
	}
	return c.Realm
}

// withDefaults returns c with every zero optional field set to its default.
func (c Config) withDefaults() Config {
	c.ServerURL = strings.TrimRight(c.ServerURL, "/")
	if c.TokenLocation == "" {
		c.TokenLocation = TokenLocationHeader
	}
	c.TokenLocation = TokenLocation(strings.ToUpper(string(c.TokenLocation)))
	if c.CookieName == "" {
		c.CookieName = DefaultCookieName
	}
	if c.AuthPrefix == "" {
		c.AuthPrefix = DefaultAuthPrefix
	}
	c.AuthPrefix = "/" + strings.Trim(c.AuthPrefix, "/")
	if c.Audience == "" {
		c.Audience = c.ClientID
	}
	if c.JWKSCacheTTL == 0 {
		c.JWKSCacheTTL = DefaultJWKSCacheTTL
	}
	if len(c.Algorithms) == 0 {
		c.Algorithms = []string{"RS256"}
	}
	if c.HTTPTimeout == 0 {
		c.HTTPTimeout = DefaultHTTPTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	// The former spelling of the switches, a negative value, sets them
	// and stays as written.
	if c.Leeway < 0 {
		c.NoLeeway = true
	}
	if c.Leeway == 0 && !c.NoLeeway {
		c.Leeway = DefaultLeeway
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MaxTokenBytes == 0 {
		c.MaxTokenBytes = DefaultMaxTokenBytes
	}
	if c.UnknownKIDRefreshInterval == 0 {
		c.UnknownKIDRefreshInterval = DefaultUnknownKIDRefreshInterval
	}
	if c.UnknownKIDWait == 0 {
		c.UnknownKIDWait = DefaultUnknownKIDWait
	}
	if c.FirstKeysWait == 0 {
		c.FirstKeysWait = DefaultFirstKeysWait
	}
	if c.VerifiedCacheSize < 0 {
		c.DisableVerifiedCache = true
	}
	if c.VerifiedCacheSize == 0 && !c.DisableVerifiedCache {
		c.VerifiedCacheSize = DefaultVerifiedCacheSize
	}
	if len(c.Scopes) == 0 {
		c.Scopes = []string{"openid", "profile", "email"}
	}
	if c.Session != nil {
		s := c.Session.withDefaults()
		c.Session = &s
	}
	if c.IssuerName == "" {
		c.IssuerName = DefaultIssuerName
	}
	if c.Issuers != nil {
		issuers := make([]TrustedIssuer, len(c.Issuers))
		for i, t := range c.Issuers {
			issuers[i] = t.withDefaults(c)
		}
		c.Issuers = issuers
	}
	return c
}

// Validate reports every problem of c, with the defaults applied, as New
// would: one error each, joined, each wrapping ErrConfig. It contacts
// nothing. (Compile does the same and keeps the result.)
func (c Config) Validate() error {
	_, err := Compile(c)
	return err
}

// WithDefaults returns c with every zero optional field set to its default
// and the names normalised (token location upper case, auth prefix with
// one leading and no trailing slash), as New and Plugin.Config see it.
func (c Config) WithDefaults() Config { return c.withDefaults() }

// validate reports every problem of c (after withDefaults), one error each,
// joined, each wrapping ErrConfig. It returns the claim mappings it
// compiled on the way: the primary issuer's, then each of c.Issuers'.
func (c Config) validate() ([]*token.Mapping, error) {
	var ps problems
	bad, missing := ps.bad, ps.missing // of a field, by its Go path
	badKey := ps.badKey                // by the specification's key
	its := func(field string) fielderr.Ref { return fielderr.L("%s", field) }
	c.validateDPoP(&ps)
	switch {
	case c.IssuerURL != "":
		if c.ServerURL != "" || c.Realm != "" {
			bad("IssuerURL", "%[1]s excludes %[2]s and %[3]s: set %[1]s (any OpenID Connect provider) or %[2]s and %[3]s (a Keycloak realm), not both",
				its("IssuerURL"), its("ServerURL"), its("Realm"))
		}
		if err := checkIssuerURL(c.IssuerURL); err != nil {
			bad("IssuerURL", "%s: %v", its("IssuerURL"), err)
		}
	case c.ServerURL == "" && c.Realm == "":
		missing("ServerURL", "%s is required with %s (a Keycloak realm), or %s (any OpenID Connect provider)", its("ServerURL"), its("Realm"), its("IssuerURL"))
	default:
		c.checkRealmForm(badKey, ps.missingKey)
	}
	if c.ClientID == "" {
		missing("ClientID", "%s is required", its("ClientID"))
	}
	mappings := make([]*token.Mapping, 1+len(c.Issuers))
	var err error
	if mappings[0], err = c.Claims.compile(); err != nil {
		ps.errs = append(ps.errs, err)
	}
	switch c.TokenLocation {
	case TokenLocationHeader, TokenLocationCookie:
	default:
		bad("TokenLocation", "%s %q: want HEADER or COOKIE", its("TokenLocation"), c.TokenLocation)
	}
	if c.TokenLocation == TokenLocationCookie && !validCookieName(c.CookieName) {
		bad("CookieName", "%s %q is not a valid cookie name", its("CookieName"), c.CookieName)
	}
	if c.IncludeRoutes {
		if c.RedirectURI == "" {
			missing("RedirectURI", "%s is required when %s is true", its("RedirectURI"), its("IncludeRoutes"))
		} else if err := checkHTTPURL(c.RedirectURI); err != nil {
			bad("RedirectURI", "%s: %v", its("RedirectURI"), err)
		}
		if len(c.SessionSecret) == 0 {
			missing("SessionSecret", "a session secret of at least 32 bytes is required when %s is true", its("IncludeRoutes"))
		} else if len(c.SessionSecret) < 32 {
			bad("SessionSecret", "a session secret of at least 32 bytes is required when %s is true", its("IncludeRoutes"))
		} else if m := placeholderSecret(c.SessionSecret); m != "" {
			bad("SessionSecret", "the session secret is a placeholder (it contains %q): generate one, e.g. openssl rand -base64 48", m)
		}
	}
	if _, err := authflow.CompileRedirectHosts(c.AllowedRedirectHosts); err != nil {
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			bad("AllowedRedirectHosts", "%v", e)
		}
	}
	if c.Session != nil {
		if !c.IncludeRoutes {
			bad("IncludeRoutes", "sessions need %s: the login routes start them", its("IncludeRoutes"))
		}
		c.Session.validate(func(field, format string, args ...any) { badKey("session."+field, format, args...) })
		if c.Session.CookieDomain != "" {
			if err := authflow.CheckCookieDomain(c.Session.CookieDomain, c.RedirectURI); err != nil {
				bad("Session.CookieDomain", "session cookie domain %q: %v", c.Session.CookieDomain, err)
			}
		}
	}
	for _, p := range c.ExcludedPaths {
		if !strings.HasPrefix(p, "/") {
			bad("ExcludedPaths", "%s: %q must start with '/'", its("ExcludedPaths"), p)
		}
	}
	if c.JWKSCacheTTL < 0 {
		bad("JWKSCacheTTL", "%s must be positive, got %s", its("JWKSCacheTTL"), c.JWKSCacheTTL)
	}
	if c.HTTPTimeout < 0 {
		bad("HTTPTimeout", "%s must be positive, got %s", its("HTTPTimeout"), c.HTTPTimeout)
	}
	if c.UnknownKIDWait < 0 {
		bad("UnknownKIDWait", "unknown-kid wait must be positive, got %s", c.UnknownKIDWait)
	}
	if c.UnknownKIDRefreshInterval < 0 {
		bad("UnknownKIDRefreshInterval", "unknown-kid refresh interval must be positive, got %s", c.UnknownKIDRefreshInterval)
	}
	if c.MaxTokenBytes < 0 {
		bad("MaxTokenBytes", "max token bytes must be positive, got %d", c.MaxTokenBytes)
	}
	checkAlgorithms(c.Algorithms, func(format string, args ...any) { badKey("algorithms", format, args...) })
	c.validateIssuers(badKey, &ps.errs, mappings[1:])
	return mappings, errors.Join(ps.errs...)
}

// checkRealmForm reports the problems of the Keycloak shorthand,
// server_url and realm.
func (c Config) checkRealmForm(bad, missing func(field, format string, args ...any)) {
	if c.ServerURL == "" {
		missing("server_url", "server_url is required")
	} else if err := checkHTTPURL(c.ServerURL); err != nil {
		bad("server_url", "server_url: %v", err)
	} else if base, realm, ok := strings.Cut(c.ServerURL, "/realms/"); ok {
		bad("server_url", "server_url %q already names a realm: set server_url to %q and realm to %q (the issuer is server_url/realms/realm)",
			c.ServerURL, base, strings.Trim(realm, "/"))
	}
	if c.Realm == "" {
		missing("realm", "realm is required")
	} else if strings.ContainsAny(c.Realm, "/?#") || strings.TrimSpace(c.Realm) != c.Realm {
		bad("realm", "realm %q: must not contain '/', '?', '#' or surrounding spaces", c.Realm)
	}
}

// checkIssuerURL checks an issuer URL: an http(s) URL with a host and
// no query or fragment (OpenID Connect Discovery §2). It is not
// normalised: tokens must carry it byte for byte.
func checkIssuerURL(s string) error {
	if err := checkHTTPURL(s); err != nil {
		return err
	}
	u, _ := url.Parse(s) // checked
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(s, "?#") {
		return fmt.Errorf("%q: an issuer has no query or fragment", s)
	}
	if strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return fmt.Errorf("%q: spaces or control characters", s)
	}
	return nil
}

func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("malformed URL %q", s)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q: scheme must be http or https", s)
	}
	if u.Host == "" {
		return fmt.Errorf("%q: host is missing", s)
	}
	if u.User != nil {
		return fmt.Errorf("%q: user info is not allowed", s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: port %s is not a TCP port (1-65535)", s, p)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return fmt.Errorf("%q: empty port", s)
	}
	return nil
}

func validCookieName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return false
		}
	}
	return true
}
