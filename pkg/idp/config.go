package idp

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
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
