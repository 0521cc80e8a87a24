package idp

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/idp-proxy/idp-proxy/internal/problem"
)

// TokenFromRequest extracts the access token from r according to
// Config.TokenLocation, without verifying it.
//
// HEADER: exactly one Authorization header with the scheme "Bearer"
// (case-insensitive) and a token of the RFC 6750 b64token alphabet. No
// header, or another scheme (a bare token included), is ErrNoToken; two
// Authorization headers are ErrInvalidRequest; a malformed token is
// ErrInvalidToken.
//
// COOKIE: the cookie Config.CookieName; two cookies of that name are
// ErrInvalidRequest. A browser's cross-origin request with an unsafe
// method (POST, PUT, PATCH, DELETE, ...; judged by net/http's
// CrossOriginProtection from Sec-Fetch-Site, else Origin against Host,
// with the origin of Config.RedirectURI trusted) carries no token: the
// browser attaches the cookie by itself, and SameSite=Lax still sends it
// from sibling subdomains, so it is not a credential there (CSRF).
func (p *Plugin) TokenFromRequest(r *http.Request) (string, error) {
	if p.cfg.TokenLocation == TokenLocationCookie {
		if p.cop.Check(r) != nil {
			return "", ErrNoToken
		}
		cs := r.CookiesNamed(p.cfg.CookieName)
		switch len(cs) {
		case 0:
			return "", ErrNoToken
		case 1:
		default:
			return "", ErrInvalidRequest
		}
		return checkTokenSyntax(cs[0].Value)
	}
	return bearerToken(r.Header)
}

func bearerToken(h http.Header) (string, error) {
	vals := h["Authorization"]
	switch len(vals) {
	case 0:
		return "", ErrNoToken
	case 1:
	default:
		return "", ErrInvalidRequest
	}
	scheme, tok, ok := strings.Cut(vals[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", ErrNoToken
	}
	return checkTokenSyntax(strings.TrimLeft(tok, " "))
}

// b64token marks the bytes of RFC 6750's b64token alphabet (without "=").
var b64token = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "-._~+/" {
		t[c] = true
	}
	return t
}()

// checkTokenSyntax accepts RFC 6750's b64token: 1*( ALPHA / DIGIT / "-" /
// "." / "_" / "~" / "+" / "/" ) *"=".
func checkTokenSyntax(tok string) (string, error) {
	if tok == "" {
		return "", ErrNoToken
	}
	i := 0
	for i < len(tok) && b64token[tok[i]] {
		i++
	}
	if i == 0 {
		return "", invalid("malformed token", nil)
	}
	for ; i < len(tok); i++ {
		if tok[i] != '=' {
			return "", invalid("malformed token", nil)
		}
	}
	return tok, nil
}

// Authenticate extracts and verifies the request's token and returns a
// shallow copy of r whose context carries the identity (see UserFrom,
// PayloadFrom, RawTokenFrom). Errors wrap ErrNoToken, ErrInvalidRequest,
// ErrInvalidToken or ErrUnavailable; answer them with WriteError.
func (p *Plugin) Authenticate(r *http.Request) (*http.Request, error) {
	raw, err := p.TokenFromRequest(r)
	if err != nil {
		return r, err
	}
	id, err := p.verify(r.Context(), raw)
	if err != nil {
		return r, err
	}
	return r.WithContext(withIdentity(r.Context(), id)), nil
}

// Middleware requires a valid token on every request except those whose
// path is in Config.ExcludedPaths (exact match), and passes the identity to
// next in the request context.
func (p *Plugin) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, skip := p.excluded[r.URL.Path]; skip {
			next.ServeHTTP(w, r)
			return
		}
		r2, err := p.Authenticate(r)
		if err != nil {
			p.WriteError(w, r, err)
			return
		}
		next.ServeHTTP(w, r2)
	})
}

// WriteError answers an error of Authenticate, Verify or a guard as RFC 6750
// and RFC 9457 want it: 401 with WWW-Authenticate (error="invalid_token"
// only when a token was sent), 400 invalid_request, 403 insufficient_scope,
// 503 with Retry-After while the keys are unavailable. The body is
// application/problem+json and never echoes the token. Unknown errors are
// 500.
func (p *Plugin) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	realm := `Bearer realm="` + p.realmQuoted + `"`
	h := w.Header()
	switch {
	case errors.Is(err, ErrNoToken):
		h.Set("WWW-Authenticate", realm)
		problem.Write(w, http.StatusUnauthorized, "a bearer token is required")
	case errors.Is(err, ErrInvalidRequest):
		h.Set("WWW-Authenticate", realm+`, error="invalid_request"`)
		problem.Write(w, http.StatusBadRequest, "the request carries more than one token")
	case errors.Is(err, ErrInvalidToken):
		reason := Reason(err)
		if reason == "" {
			reason = "invalid token"
		}
		h.Set("WWW-Authenticate", realm+`, error="invalid_token", error_description="`+reason+`"`)
		problem.Write(w, http.StatusUnauthorized, reason)
	case errors.Is(err, ErrForbidden):
		h.Set("WWW-Authenticate", realm+`, error="insufficient_scope"`)
		problem.Write(w, http.StatusForbidden, "the token lacks a required role or scope")
	case errors.Is(err, ErrUnavailable):
		h.Set("Retry-After", "5")
		problem.Write(w, http.StatusServiceUnavailable, "the identity provider's keys are not available yet")
	default:
		p.cfg.Logger.Error("idp: unexpected error", "error", err, "path", r.URL.Path)
		problem.Write(w, http.StatusInternalServerError, "internal error")
	}
	if p.cfg.Logger.Enabled(r.Context(), slog.LevelDebug) {
		p.cfg.Logger.Debug("idp: request refused", "path", r.URL.Path, "error", err)
	}
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
