package proxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp/assert"
)

// Credential modes: what an upstream receives as the caller's credential
// (UpstreamConfig.Credential).
const (
	// CredentialForward forwards the caller's verified token as
	// Authorization: Bearer (headers.forward_token says whether). The
	// default.
	CredentialForward = "forward"
	// CredentialNone sends no credential: the identity headers only.
	CredentialNone = "none"
	// CredentialAssertion sends an assertion the proxy signs for this
	// upstream alone (see AssertionConfig).
	CredentialAssertion = "assertion"
)

// Assertion defaults.
const (
	DefaultAssertionHeader    = "X-Auth-Request-Assertion"
	DefaultAssertionCacheSize = 10000
	maxAssertionLifetime      = time.Hour
)

// AssertionConfig configures the assertions of the upstreams whose
// credential is "assertion": the proxy is their issuer. It signs, per
// identity and upstream, a short-lived JWT (iss IssuerURL, aud the
// upstream's audience, sub, preferred_username, email when verified,
// roles, groups, issuer_name, acr/amr/auth_time when the caller's token
// has them, iat/nbf/exp, jti; header typ JWT and kid) and serves the
// discovery document and JWKS at IssuerURL, so that the upstream verifies
// it as any OpenID Connect issuer's token (see package
// github.com/idp-proxy/idp-proxy/pkg/idp/assert).
type AssertionConfig struct {
	// IssuerURL is the proxy's public URL as the upstreams reach it; the
	// proxy answers {path}/.well-known/openid-configuration and
	// {path}/jwks.json on every host. https (http for localhost only).
	// Required with an assertion upstream.
	IssuerURL string `mapstructure:"issuer_url" yaml:"issuer_url"`
	// KeyFile holds the signing keys: PEM PKCS #8 blocks, with optional
	// Not-Before headers for rotation (see the README). Created with one
	// P-256 key when absent. Share it between replicas (a volume, a
	// Kubernetes Secret). Required with an assertion upstream.
	KeyFile string `mapstructure:"key_file" yaml:"key_file"`
	// Lifetime is how long an assertion is valid; never beyond the
	// caller's token. [1m]
	Lifetime time.Duration `mapstructure:"lifetime" yaml:"lifetime"`
	// Header carries the assertion; "Authorization" sends it as
	// "Authorization: Bearer <assertion>". ["X-Auth-Request-Assertion"]
	Header string `mapstructure:"header" yaml:"header"`
	// CacheSize bounds the assertions kept per upstream (by token), so
	// that a repeated token is not signed again until its assertion is
	// close to expiry. [10000]
	CacheSize int `mapstructure:"cache_size" yaml:"cache_size"`
}

// checkCredential reports a credential mode that is not one of the
// built modes; field is its Go path ("Upstream.Credential").
func checkCredential(field, mode string) error {
	switch mode {
	case "", CredentialForward, CredentialNone, CredentialAssertion, CredentialExchange, CredentialClientCredentials:
		return nil
	}
	return fieldErrorf(fields(field), "%s %q: want forward, none, assertion, exchange or client_credentials", named(field), mode)
}

// checkTarget reports audience and scopes on an upstream whose credential
// does not use them; prefix is its Go path's ("Upstreams[1].").
func checkTarget(prefix string, u UpstreamConfig) []error {
	var errs []error
	switch u.Credential {
	case CredentialAssertion, CredentialExchange, CredentialClientCredentials:
	default:
		if u.Audience != "" {
			errs = append(errs, fieldErrorf(fields(prefix+"Audience"), "%s is the upstream's audience for assertion, exchange and client_credentials: set %s to one of them, or remove it",
				named(prefix+"Audience"), named(prefix+"Credential")))
		}
	}
	if len(u.Scopes) > 0 && u.Credential != CredentialExchange && u.Credential != CredentialClientCredentials {
		errs = append(errs, fieldErrorf(fields(prefix+"Scopes"), "%s are requested by credential exchange and client_credentials: set %s to one of them, or remove it",
			named(prefix+"Scopes"), named(prefix+"Credential")))
	}
	for _, s := range u.Scopes {
		if !validScopeToken(s) {
			errs = append(errs, fieldErrorf(fields(prefix+"Scopes"), "%s: %q is not a scope (RFC 6749 §3.3: printable ASCII without space, \" or \\)", named(prefix+"Scopes"), s))
		}
	}
	return errs
}

// validScopeToken: RFC 6749 §3.3 scope-token, 1*( %x21 / %x23-5B / %x5D-7E ).
func validScopeToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// needsClientSecret reports the upstreams whose credential needs the
// proxy's client secret, as field-named errors (check-config says which).
func (c Config) needsClientSecret(secret string) []error {
	if secret != "" {
		return nil
	}
	var errs []error
	for i, u := range c.upstreamConfigs() {
		if u.Credential != CredentialExchange && u.Credential != CredentialClientCredentials {
			continue
		}
		k := "Upstream.Credential"
		if len(c.Upstreams) > 0 {
			k = fmt.Sprintf("Upstreams[%d].Credential", i)
		}
		errs = append(errs, fieldErrorf(fields(k, "IDP.ClientSecret"), "%s %s needs %s: the proxy gets the upstream's token from the identity provider as a confidential client",
			named(k), u.Credential, named("IDP.ClientSecret")))
	}
	return errs
}

// credential is an upstream's compiled credential mode; nil is forward.
type credential struct {
	mode     string
	name     string // the upstream's, in answers and logs
	audience string
	header   string // canonical
	cache    *assertionCache
	tokens   tokenSource // exchange, client_credentials
}

// newCredential compiles an upstream's mode; audience is its aud. The
// client_credentials mode sends the assertion when there is a signer.
func newCredential(mode, audience string, a AssertionConfig, signer *assert.Signer) *credential {
	switch mode {
	case "", CredentialForward:
		return nil
	case CredentialNone, CredentialExchange:
		return &credential{mode: mode}
	case CredentialClientCredentials:
		if signer == nil {
			return &credential{mode: mode}
		}
	}
	c := &credential{mode: mode, audience: audience, header: canonical(a.Header)}
	prefix := ""
	if c.header == "Authorization" {
		prefix = "Bearer "
	}
	c.cache = newAssertionCache(signer, audience, prefix, a.CacheSize)
	return c
}

// withDefaults fills the zero fields.
func (a AssertionConfig) withDefaults() AssertionConfig {
	if a.Header == "" {
		a.Header = DefaultAssertionHeader
	}
	if a.CacheSize == 0 {
		a.CacheSize = DefaultAssertionCacheSize
	}
	if a.Lifetime == 0 {
		a.Lifetime = assert.DefaultLifetime
	}
	return a
}

// validate reports the problems of a (defaults applied), used says
// whether an upstream's credential is assertion.
func (a AssertionConfig) validate(used bool) []error {
	var errs []error
	// bad reports a problem of field, which format's first %s names.
	bad := func(field string, format string, args ...any) {
		errs = append(errs, fieldErrorf(fields(field), format, append([]any{named(field)}, args...)...))
	}
	if a.Lifetime < 10*time.Second || a.Lifetime > maxAssertionLifetime {
		bad("Assertion.Lifetime", "%s %s: want 10s to 1h (an assertion is short-lived)", a.Lifetime)
	}
	if a.CacheSize < 0 {
		bad("Assertion.CacheSize", "%s must not be negative, got %d", a.CacheSize)
	}
	switch f := foldName(a.Header); {
	case !isToken(a.Header):
		bad("Assertion.Header", "%s %q is not a valid header name", a.Header)
	case f == "authorization":
	case reservedHeader(f) != "":
		bad("Assertion.Header", "%s %q is %s: choose another header name (or Authorization)", a.Header, reservedHeader(f))
	}
	if !used {
		return errs
	}
	if a.IssuerURL == "" {
		errs = append(errs, missingFieldf(fields("Assertion.IssuerURL"), "%s is required: an upstream's credential is assertion", named("Assertion.IssuerURL")))
	}
	if a.KeyFile == "" {
		errs = append(errs, missingFieldf(fields("Assertion.KeyFile"), "%s is required: an upstream's credential is assertion (the file is created when absent)", named("Assertion.KeyFile")))
	}
	if len(errs) > 0 {
		return errs
	}
	if _, err := a.signer(false); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// signer returns the signer of a: its key file's keys, the file created
// first when create is set. Without create a missing file is checked
// with a throw-away key (check-config creates nothing).
func (a AssertionConfig) signer(create bool) (*assert.Signer, error) {
	var ks []assert.Key
	var err error
	switch _, serr := os.Stat(a.KeyFile); {
	case create:
		ks, err = assert.LoadOrCreateKeys(a.KeyFile)
	case errors.Is(serr, os.ErrNotExist):
		k, gerr := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if gerr != nil {
			return nil, gerr
		}
		ks = []assert.Key{{Signer: k}}
	default:
		ks, err = assert.LoadKeys(a.KeyFile)
	}
	if err != nil {
		return nil, fieldErrorf(fields("Assertion.KeyFile"), "%s: %v", named("Assertion.KeyFile"), err)
	}
	s, err := assert.NewSigner(assert.Options{Issuer: a.IssuerURL, Keys: ks, Lifetime: a.Lifetime})
	if err != nil {
		return nil, fieldErrorf(fields("Assertion.IssuerURL"), "%s: %v", named("Assertion.IssuerURL"), err)
	}
	return s, nil
}

// defaultAudience is the aud of an upstream that names none: its match
// pattern's host (and path, when it has one), or the single upstream's
// URL.
func defaultAudience(host, path string) string {
	if path == "/" || path == "" {
		return host
	}
	return host + strings.TrimSuffix(path, "/")
}

// assertionIssuer serves the discovery document and the JWKS of the
// proxy's assertions.
type assertionIssuer struct {
	disco, jwks string
	h           http.Handler
}

func newAssertionIssuer(s *assert.Signer) *assertionIssuer {
	d, j := s.Paths()
	return &assertionIssuer{disco: d, jwks: j, h: s.Handler()}
}

// serves reports whether path is one of the issuer's documents.
func (i *assertionIssuer) serves(path string) bool {
	return i != nil && (path == i.disco || path == i.jwks)
}

// buildCredentials sets the credential mode of every upstream and, when
// one is assertion, loads (or creates) the key file and serves the
// issuer's documents. The assertion header is stripped from every
// client's request, whatever the mode.
func (p *Proxy) buildCredentials() error {
	a := p.cfg.Assertion
	var signer *assert.Signer
	if p.cfg.usesAssertion() || p.cfg.assertionOptional() && a.IssuerURL != "" && a.KeyFile != "" {
		s, err := a.signer(true)
		if err != nil {
			return err
		}
		signer = s
		p.issuer = newAssertionIssuer(s)
	}
	strip := foldName(a.Header)
	p.headers.strip[strip] = struct{}{}
	if p.ups == nil {
		aud := p.cfg.Upstream.Audience
		if aud == "" {
			aud = p.cfg.Upstream.URL
		}
		p.headers.cred = newCredential(p.cfg.Upstream.Credential, aud, a, signer)
		return p.buildTokens(p.headers.cred, "upstream", p.cfg.Upstream)
	}
	for _, up := range p.ups.all {
		up.headers.strip[strip] = struct{}{}
		up.headers.cred = newCredential(up.cfg.Credential, up.audience, a, signer)
		if err := p.buildTokens(up.headers.cred, up.match, up.cfg); err != nil {
			return err
		}
	}
	return nil
}

// buildTokens gives an exchange or client_credentials credential its
// token source; name is the upstream's.
func (p *Proxy) buildTokens(c *credential, name string, u UpstreamConfig) error {
	if c == nil {
		return nil
	}
	c.name = name
	if c.mode != CredentialExchange && c.mode != CredentialClientCredentials {
		return nil
	}
	ts, err := p.newTokenSource(c.mode, u.Audience, u.Scopes)
	if err != nil {
		return fmt.Errorf("proxy: %s credential %s: %w", name, c.mode, err)
	}
	c.tokens = ts
	return nil
}
