package idp

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/idp-proxy/idp-proxy/internal/fielderr"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/authflow"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

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
