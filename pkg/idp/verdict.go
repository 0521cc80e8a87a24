package idp

import (
	"errors"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/session"
	"log/slog"
	"net/http"
	"strings"

	"github.com/idp-proxy/idp-proxy/internal/problem"
	"github.com/idp-proxy/idp-proxy/pkg/idp/dpop"
)

// Outcome classifies a Verdict.
type Outcome uint8

// Outcomes of Authorize, each with the answer WriteVerdict gives.
const (
	// Allowed: a valid token that every guard admits (no answer: serve).
	Allowed Outcome = iota
	// NoToken: the request carries no token (401).
	NoToken
	// InvalidRequest: the request carries more than one token (400).
	InvalidRequest
	// InvalidToken: the token is malformed, badly signed, expired or for
	// another audience or issuer (401 invalid_token).
	InvalidToken
	// Forbidden: the token is valid but a guard refused it (403
	// insufficient_scope).
	Forbidden
	// Unavailable: the provider's keys are not available, or the session
	// store is not (ErrSessionStoreUnavailable) (503).
	Unavailable
)

var outcomeNames = [...]string{"allowed", "no_token", "invalid_request", "invalid_token", "forbidden", "unavailable"}

// String returns the outcome's snake_case name, as logs and metrics use it.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// Verdict is how Authorize judged a request. It is a plain value: nothing
// has been written yet; WriteVerdict answers a refusal.
type Verdict struct {
	// Outcome is the classification.
	Outcome Outcome
	// Identity is the verified identity: set when Outcome is Allowed or
	// Forbidden (the token was valid), nil otherwise.
	Identity *Identity
	// Err is nil when Allowed; otherwise it wraps ErrNoToken,
	// ErrInvalidRequest, ErrInvalidToken, ErrForbidden or ErrUnavailable
	// (Reason gives the invalid_token description).
	Err error
	// Cookies must be set on the answer whatever the outcome: a browser
	// session's refreshed cookie, or the deletion of a session that ended
	// (Config.Session). WriteVerdict sets them; on Allowed, call
	// SetCookies before serving.
	Cookies []*http.Cookie
	// Session reports that the token came from a browser session rather
	// than from the request's Authorization header or token cookie.
	Session bool
	// Cached reports that the verified-token cache answered: the token
	// was verified before and its signature was not checked again.
	Cached bool
	// Clause names the rule's clause that refused a Forbidden request
	// ("roles", "groups", "claims:tid", "email_domains": see NamedGuard),
	// "" otherwise or for a guard that names none. It is the rule's
	// wording, never token content; WriteVerdict sends it as the "clause"
	// member of the problem+json body.
	Clause string

	// dpopMode is the DPoP mode the request was judged in, dpopScheme
	// whether its token came under the DPoP scheme: WriteVerdict's
	// challenges (binding.go).
	dpopMode   dpop.Mode
	dpopScheme bool
}

// SetCookies adds v.Cookies to w's header.
func (v Verdict) SetCookies(w http.ResponseWriter) {
	for _, c := range v.Cookies {
		http.SetCookie(w, c)
	}
}

// Allowed reports whether the request may be served.
func (v Verdict) Allowed() bool { return v.Outcome == Allowed && v.Identity != nil }

// Status is the HTTP status WriteVerdict answers with: 200 when allowed,
// else 400, 401, 403 or 503.
func (v Verdict) Status() int {
	switch v.Outcome {
	case Allowed:
		return http.StatusOK
	case InvalidRequest:
		return http.StatusBadRequest
	case Forbidden:
		return http.StatusForbidden
	case Unavailable:
		return http.StatusServiceUnavailable
	case NoToken, InvalidToken:
		return http.StatusUnauthorized
	}
	return http.StatusInternalServerError
}

// Detail is the problem+json detail of a refusal ("" when allowed). It
// never contains the token.
func (v Verdict) Detail() string {
	switch v.Outcome {
	case NoToken:
		if v.dpopMode == dpop.Required {
			return "a DPoP-bound token and its proof are required"
		}
		return "a bearer token is required"
	case InvalidRequest:
		return "the request carries more than one token"
	case InvalidToken:
		if reason := Reason(v.Err); reason != "" {
			return reason
		}
		return "invalid token"
	case Forbidden:
		return forbiddenDetail(v.Clause)
	case Unavailable:
		if errors.Is(v.Err, ErrSessionStoreUnavailable) {
			return detailSessionStoreUnavailable
		}
		if errors.Is(v.Err, errReplayUnavailable) {
			return replayDetail(v.Err)
		}
		if errors.Is(v.Err, session.ErrRefreshUnavailable) {
			return "the identity provider did not refresh the session's expired access token; retry shortly"
		}
		if errors.Is(v.Err, errKeyWait) {
			return "the identity provider did not send its keys in time"
		}
		if errors.Is(v.Err, errKeysUnreachable) {
			return "the identity provider's keys could not be fetched to check this token's signing key"
		}
		return "the identity provider's keys are not available yet"
	}
	return ""
}

// forbiddenDetail words a 403 after the clause that refused it (see
// NamedGuard), so that the answer says which of a rule's clauses to look
// at: a token from an issuer the rule does not accept is not "lacking a
// role". A clause of another guard is named as the guard names it.
func forbiddenDetail(clause string) string {
	kind, client, _ := strings.Cut(clause, ":")
	switch kind {
	case "roles":
		return "the token lacks a required role"
	case "client_roles":
		return "the token lacks a required role of client " + client
	case "scopes":
		return "the token lacks a required scope"
	case "groups":
		return "the token lacks a required group"
	case "claims":
		return "the token lacks a required claim value"
	case "email_domains":
		return "the token lacks a verified e-mail address in an accepted domain"
	case "issuers":
		return "the token's issuer is not one this rule accepts"
	case "":
		return "a guard refused the token"
	}
	return "the token does not satisfy the rule's " + clause + " clause"
}

// detailSessionStoreUnavailable answers requests that need the session
// store while it fails.
const detailSessionStoreUnavailable = "the session store is unavailable; sign-in sessions cannot be used until it is back"

// VerdictOf classifies an error of Authenticate, Verify or TokenFromRequest.
// An error that is none of the package's sentinels is Unavailable (a
// technical failure, never an allow).
func VerdictOf(err error) Verdict {
	switch {
	case err == nil:
		return Verdict{Outcome: Allowed}
	case errors.Is(err, ErrNoToken):
		return Verdict{Outcome: NoToken, Err: err}
	case errors.Is(err, ErrInvalidRequest):
		return Verdict{Outcome: InvalidRequest, Err: err}
	case errors.Is(err, ErrInvalidToken):
		return Verdict{Outcome: InvalidToken, Err: err}
	case errors.Is(err, ErrForbidden):
		return Verdict{Outcome: Forbidden, Err: err}
	}
	return Verdict{Outcome: Unavailable, Err: err}
}

// with returns o carrying v's session fields.
func (v Verdict) with(o Verdict) Verdict {
	o.Cookies, o.Session, o.Cached = v.Cookies, v.Session, v.Cached
	o.dpopMode, o.dpopScheme = v.dpopMode, v.dpopScheme
	return o
}

// WriteVerdict answers a refused request as RFC 6750 and RFC 9457 want it:
// 401 with WWW-Authenticate (error="invalid_token" only when a token was
// sent), 400 invalid_request, 403 insufficient_scope, 503 with Retry-After
// while the keys are unavailable. The body is application/problem+json and
// never echoes the token; a browser navigation (see WantsPage) gets
// instead a small HTML page with the same status and headers, saying what
// happened and offering the way on (sign in again, sign out, back). With
// browser sessions (Config.Session), a browser navigation without
// credentials (see IsNavigation) is sent to the login route instead: 302
// to {AuthPrefix}/login?return_to=<the path and query>. A 403 names the
// refusing clause in the body's "clause" member. The verdict's Cookies
// are set in every case; an Allowed verdict writes nothing else.
func (p *Plugin) WriteVerdict(w http.ResponseWriter, r *http.Request, v Verdict) {
	v.SetCookies(w)
	realm := `Bearer realm="` + p.realmQuoted + `"`
	h := w.Header()
	switch v.Outcome {
	case Allowed:
		return
	case NoToken:
		if p.sessions != nil && IsNavigation(r) {
			p.redirectToLogin(w, r)
			return
		}
		h.Set("WWW-Authenticate", realm)
	case InvalidRequest:
		h.Set("WWW-Authenticate", realm+`, error="invalid_request"`)
	case InvalidToken:
		h.Set("WWW-Authenticate", realm+`, error="invalid_token", error_description="`+v.Detail()+`"`)
	case Forbidden:
		h.Set("WWW-Authenticate", realm+`, error="insufficient_scope"`)
	case Unavailable:
		h.Set("Retry-After", "5")
	}
	if v.dpopMode != dpop.Off && (v.Outcome == NoToken || v.Outcome == InvalidToken) {
		p.dpopChallenges(h, v, h.Get("WWW-Authenticate"))
	}
	if WantsPage(r) {
		p.writePage(w, r, v.Status(), v.Detail(), v.Identity)
	} else {
		problem.WriteDetails(w, problem.Details{Status: v.Status(), Detail: v.Detail(), Clause: v.Clause})
	}
	if p.cfg.Logger.Enabled(r.Context(), slog.LevelDebug) {
		p.cfg.Logger.Debug("idp: request refused", "path", r.URL.Path, "outcome", v.Outcome.String(), "clause", v.Clause, "error", v.Err)
	}
}

// WriteError answers an error of Authenticate, Verify or a guard like
// WriteVerdict(w, r, VerdictOf(err)). An error that is none of the
// package's sentinels is logged and answered 500.
func (p *Plugin) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	for _, e := range [...]error{ErrNoToken, ErrInvalidRequest, ErrInvalidToken, ErrForbidden, ErrUnavailable} {
		if errors.Is(err, e) {
			p.WriteVerdict(w, r, VerdictOf(err))
			return
		}
	}
	p.cfg.Logger.Error("idp: unexpected error", "error", err, "path", r.URL.Path)
	p.WriteProblem(w, r, http.StatusInternalServerError, "internal error")
}

// quoteRealm makes s safe inside a quoted-string of WWW-Authenticate.
func quoteRealm(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < ' ' || c == 0x7f:
			// dropped: never valid in a header
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
