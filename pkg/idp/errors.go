package idp

import (
	"errors"
	"fmt"

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

// ConfigError is one problem Config.Validate (and New) found in a Config:
// the field concerned, by its configuration key, and what is wrong with
// it. It wraps ErrConfig. Match it with errors.As to point a user at the
// key to fix.
type ConfigError struct {
	// Field is the field's key as Config's documentation and
	// idp-proxy's idp section spell it ("realm", "redirect_uri",
	// "session_secret"), or "session." and the key for a SessionConfig
	// field ("session.cookie_domain", "session.previous_secrets").
	Field string
	// Missing reports that the field is required and not set.
	Missing bool
	// Problem says what is wrong, naming the field ("realm is required").
	Problem string
}

func (e *ConfigError) Error() string { return ErrConfig.Error() + ": " + e.Problem }
func (e *ConfigError) Unwrap() error { return ErrConfig }

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
