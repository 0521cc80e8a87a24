package idp

import (
	"strings"
	"time"
)

// Session defaults.
const (
	DefaultSessionCookie        = "idp_session"
	DefaultSessionMaxAge        = 12 * time.Hour
	DefaultSessionRefreshMargin = time.Minute
	DefaultSessionCacheSize     = 10000
	DefaultSessionRefreshWait   = time.Second
)

// SessionConfig turns on browser sessions (Config.Session). Zero fields
// take the documented defaults.
type SessionConfig struct {
	// Backend keeps the sessions server-side (several replicas, immediate
	// back-channel logout everywhere, single-use logins across replicas):
	// the cookie then holds only a random session id. nil: the cookie
	// store, where the tokens are sealed (AES-256-GCM, key derived from
	// Config.SessionSecret) into the cookie itself, split into chunks when
	// over 3,800 bytes.
	Backend SessionBackend
	// CookieName names the session cookie (and its chunks NAME_1, NAME_2,
	// ...). Over https it is prefixed "__Host-" (Secure, Path=/, no
	// Domain): no sibling subdomain can set it. [idp_session]
	CookieName string
	// CookieDomain shares the session between the hosts of a domain
	// ("example.com": every *.example.com host, single sign-on across
	// the apps behind one sign-in). The cookie is then "__Secure-"-
	// prefixed (Secure, Path=/, Domain=CookieDomain): RedirectURI must
	// be https and its host must be CookieDomain or one of its
	// subdomains, and a public suffix ("com", "co.uk") is refused. A
	// sibling subdomain can then set or overwrite the cookie (it cannot
	// read or forge its sealed content). [""; a host-only __Host- cookie]
	CookieDomain string
	// MaxAge is a session's absolute lifetime, whatever its refreshes; the
	// provider's own session and refresh-token lifetimes apply as well.
	// [12h]
	MaxAge time.Duration
	// RefreshMargin: an access token that expires within the margin is
	// refreshed (once per session, also under concurrent requests) before
	// the request is judged. [1m]
	RefreshMargin time.Duration
	// RefreshWait bounds the waits for a session's refresh, so that a
	// provider that hangs holds one request per session, not every one.
	// The request that starts the refresh waits up to RefreshWait while
	// its access token stays valid for more than twice as long, then goes
	// on with that token; one whose token expires sooner waits for the
	// refresh itself (up to HTTPTimeout), as it cannot go on without it.
	// Any other request of the session waits only until the refresh is
	// RefreshWait old, then is answered at once: with the current token
	// while it is valid, else 503 "the identity provider did not refresh
	// the session's expired access token". Negative: always wait. [1s]
	RefreshWait time.Duration
	// PostLogoutRedirectURI is where the provider sends the browser after
	// a logout through its end_session_endpoint (it must be registered at
	// the provider). "" leaves it to the provider. [""]
	PostLogoutRedirectURI string
	// PreviousSecrets are former SessionSecret values: cookies sealed with
	// them still open (key rotation), new ones are sealed with
	// SessionSecret. [none]
	PreviousSecrets [][]byte
	// CacheSize bounds the cookie store's cache of opened sessions, which
	// spares a request the decryption. Negative disables it. [10000]
	CacheSize int
}

func (c SessionConfig) withDefaults() SessionConfig {
	c.CookieDomain = strings.ToLower(strings.TrimPrefix(c.CookieDomain, "."))
	if c.CookieName == "" {
		c.CookieName = DefaultSessionCookie
	}
	if c.MaxAge == 0 {
		c.MaxAge = DefaultSessionMaxAge
	}
	if c.RefreshMargin == 0 {
		c.RefreshMargin = DefaultSessionRefreshMargin
	}
	if c.CacheSize == 0 {
		c.CacheSize = DefaultSessionCacheSize
	}
	if c.RefreshWait == 0 {
		c.RefreshWait = DefaultSessionRefreshWait
	}
	return c
}

func (c SessionConfig) validate(bad func(field, format string, args ...any)) {
	if !validCookieName(c.CookieName) || strings.HasPrefix(c.CookieName, "__") {
		bad("cookie_name", "session cookie name %q: want a cookie token without a __ prefix (the __Host- prefix is added on https)", c.CookieName)
	}
	if c.MaxAge < time.Minute {
		bad("max_age", "session max age %s: want at least 1m", c.MaxAge)
	}
	if c.RefreshMargin < 0 || c.RefreshMargin >= c.MaxAge {
		bad("refresh_margin", "session refresh margin %s: want 0 or more and less than the max age", c.RefreshMargin)
	}
	for i, s := range c.PreviousSecrets {
		if len(s) < 32 {
			bad("previous_secrets", "previous session secret %d: at least 32 bytes", i+1)
		} else if m := placeholderSecret(s); m != "" {
			bad("previous_secrets", "previous session secret %d is a placeholder (it contains %q)", i+1, m)
		}
	}
}
