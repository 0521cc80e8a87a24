package idp

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode"

	"github.com/idp-proxy/idp-proxy/internal/fielderr"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/idperr"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/session"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

// Sentinel errors. Errors returned by this package wrap one of them; match
// with errors.Is. They keep apart "no credentials" (ErrNoToken), "bad
// credentials" (ErrInvalidToken, ErrInvalidRequest), "not allowed"
// (ErrForbidden) and "technical failure" (ErrUnavailable).
var (
	// ErrNoToken: the request carries no access token.
	ErrNoToken = idperr.ErrNoToken
	// ErrCrossOrigin: a browser's cross-origin request with an unsafe
	// method carried the token cookie (TokenLocationCookie), which is not
	// a credential there (see TokenFromRequest). It wraps ErrNoToken.
	ErrCrossOrigin = fmt.Errorf("%w: the token cookie is not a credential on a cross-origin request", ErrNoToken)
	// ErrInvalidRequest: the request carries credentials in an ambiguous
	// form, for example two Authorization headers (RFC 6750 invalid_request).
	ErrInvalidRequest = errors.New("idp: invalid request")
	// ErrInvalidToken: the token is malformed, badly signed, expired, not yet
	// valid, for another issuer or audience, or not an access token.
	ErrInvalidToken = token.ErrInvalid
	// ErrSenderConstrained: the token is bound to a key or certificate
	// (cnf: cnf.jkt for DPoP, RFC 9449; cnf["x5t#S256"] for a client
	// certificate, RFC 8705; or Keycloak's typ "DPoP"), or came under the
	// DPoP scheme, and the request did not prove possession as the DPoP
	// mode requires (see PossessionError, which wraps it). It comes
	// wrapped in an ErrInvalidToken (401).
	ErrSenderConstrained = errors.New("idp: proof of possession refused")
	// ErrForbidden: the token is valid but a guard refused it.
	ErrForbidden = errors.New("idp: insufficient permissions")
	// ErrUnavailable: the provider's keys are not available yet, so no
	// token can be verified; retry later.
	ErrUnavailable = idperr.ErrUnavailable
	// ErrSessionStoreUnavailable: the session store (Config.Session's
	// Backend, e.g. Redis) failed or did not answer, so browser sessions
	// cannot be read, started or ended there; bearer tokens are not
	// affected. It wraps ErrUnavailable (a 503 with Retry-After) and is
	// answered "the session store is unavailable", never as the
	// provider's keys.
	ErrSessionStoreUnavailable = idperr.ErrSessionStoreUnavailable
	// ErrConfig: New was given an invalid Config.
	ErrConfig = errors.New("idp: invalid config")
	// ErrClaimType is the error of TokenPayload.ClaimValues for a claim that
	// is not a string, a boolean, a number or an array of them.
	ErrClaimType = errors.New("idp: the claim is not a string, boolean, number or array of them")
	// ErrDiscovery: the provider's discovery document was refused (another
	// issuer named, a required endpoint absent, an endpoint not an http(s)
	// URL). Like an unreachable provider, it leaves the plugin not ready, and
	// is retried.
	ErrDiscovery = errors.New("idp: discovery document refused")
	// ErrClientRejected: the identity provider refused the client's own
	// credentials (a wrong or missing client secret, an unknown or disabled
	// client), or does not let it use the flow the /auth routes need.
	ErrClientRejected = errors.New("idp: the identity provider refused the client")
	// ErrSessionNotFound is returned by SessionBackend.Get for an absent
	// key.
	ErrSessionNotFound = session.ErrNotFound
	// ErrInsecureTransport: ForwardToken refused to send a bearer token over
	// plain http to a host that is not loopback.
	ErrInsecureTransport = errors.New("idp: refusing to send a bearer token over plain http")
)

// ConfigError is one problem Config.Validate (and New, NewPages) found:
// the field concerned, by its Go path from Config ("Realm",
// "RedirectURI", "Session.CookieDomain", "Session.PreviousSecrets",
// "Pages.Logo"), whether it is required and missing, and the Reason, what
// is wrong with it, in the specification's words ("realm is required").
// It wraps ErrConfig. Match it with errors.As to point a user at the
// field to fix; a program with a file of its own maps Field to its key.
// Error() is "idp: invalid config: " and the reason.
type ConfigError = fielderr.Error

// problems collects the problems of a Config, each a *ConfigError: of a
// field named by its Go path (bad, missing), or by its specification key
// (badKey, missingKey: the checks that TrustedIssuer entries share, which
// report by key).
type problems struct{ errs []error }

func (p *problems) bad(field, format string, args ...any) {
	p.errs = append(p.errs, fielderr.New(ErrConfig.Error()+": ", ErrConfig, false, field, nil, format, args...))
}

func (p *problems) missing(field, format string, args ...any) {
	p.errs = append(p.errs, fielderr.New(ErrConfig.Error()+": ", ErrConfig, true, field, nil, format, args...))
}

func (p *problems) badKey(key, format string, args ...any) {
	p.errs = append(p.errs, configError(key, false, format, args...))
}

func (p *problems) missingKey(key, format string, args ...any) {
	p.errs = append(p.errs, configError(key, true, format, args...))
}

// configError returns the problem of the field named by its
// specification key (see goPath).
func configError(key string, missing bool, format string, args ...any) *ConfigError {
	return fielderr.New(ErrConfig.Error()+": ", ErrConfig, missing, goPath(reflect.TypeFor[Config](), key), nil, format, args...)
}

// goPath returns the Go path of the field a specification key names: the
// field whose name, in snake case, is the key, element by element
// ("redirect_uri" is "RedirectURI", "session.cookie_domain"
// "Session.CookieDomain"), through pointers; the key itself past the
// first element that names no field.
func goPath(t reflect.Type, key string) string {
	var out []string
	elems := strings.Split(key, ".")
	for i, e := range elems {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		var f reflect.StructField
		found := false
		if t.Kind() == reflect.Struct {
			for j := range t.NumField() {
				if sf := t.Field(j); sf.IsExported() && snakeCase(sf.Name) == e {
					f, found = sf, true
					break
				}
			}
		}
		if !found {
			return strings.Join(append(out, elems[i:]...), ".")
		}
		out = append(out, f.Name)
		t = f.Type
	}
	return strings.Join(out, ".")
}

// snakeCase spells a Go name in snake case, a run of capitals as one word:
// "RedirectURI" is "redirect_uri", "JWKSCacheTTL" "jwks_cache_ttl".
func snakeCase(name string) string {
	var b strings.Builder
	r := []rune(name)
	for i, c := range r {
		upper := unicode.IsUpper(c)
		if upper && i > 0 && (unicode.IsLower(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1]) && unicode.IsUpper(r[i-1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// invalid returns an error wrapping ErrInvalidToken with a reason that is
// safe to show to the client (it never contains the token or claim
// values) and the cause, for logs (may be nil).
func invalid(reason string, cause error) error { return token.Invalid(reason, cause) }

// Reason returns the client-safe reason of an ErrInvalidToken error, or ""
// when err carries none.
func Reason(err error) string {
	var te *token.Error
	if errors.As(err, &te) {
		return te.Reason
	}
	return ""
}
