package idp

import (
	"errors"
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
// from sibling subdomains, so it is not a credential there (CSRF). When
// such a request carries the cookie the error is ErrCrossOrigin (which
// wraps ErrNoToken), and Authorize does not fall back to a session.
func (p *Plugin) TokenFromRequest(r *http.Request) (string, error) {
	raw, err := p.rawToken(r)
	if err != nil {
		return "", err
	}
	return checkTokenSyntax(raw)
}

// rawToken is TokenFromRequest without the syntax check of the token
// itself (Authorize skips it for a token verified before).
func (p *Plugin) rawToken(r *http.Request) (string, error) {
	if p.cfg.TokenLocation == TokenLocationCookie {
		cs := r.CookiesNamed(p.cfg.CookieName)
		if p.cop.Check(r) != nil {
			if len(cs) == 0 {
				return "", ErrNoToken
			}
			return "", ErrCrossOrigin
		}
		switch len(cs) {
		case 0:
			return "", ErrNoToken
		case 1:
		default:
			return "", ErrInvalidRequest
		}
		return cs[0].Value, nil
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
	return strings.TrimLeft(tok, " "), nil
}

// b64token marks the bytes of RFC 6750's b64token alphabet (without "="):
// 1 in, 0 out.
var b64token = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = 1, 1
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = 1
	}
	for _, c := range "-._~+/" {
		t[c] = 1
	}
	return t
}()

// checkTokenSyntax accepts RFC 6750's b64token: 1*( ALPHA / DIGIT / "-" /
// "." / "_" / "~" / "+" / "/" ) *"=". It looks at eight bytes per step
// (one branch instead of eight: tokens are a kilobyte or more).
func checkTokenSyntax(tok string) (string, error) {
	if tok == "" {
		return "", ErrNoToken
	}
	i := 0
	for ; i+8 <= len(tok); i += 8 {
		b := tok[i : i+8]
		if b64token[b[0]]&b64token[b[1]]&b64token[b[2]]&b64token[b[3]]&
			b64token[b[4]]&b64token[b[5]]&b64token[b[6]]&b64token[b[7]] == 0 {
			break
		}
	}
	for i < len(tok) && b64token[tok[i]] == 1 {
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
// shallow copy of r whose context carries the Identity (see IdentityFrom,
// UserFrom, PayloadFrom, RawTokenFrom). Errors wrap ErrNoToken,
// ErrInvalidRequest, ErrInvalidToken or ErrUnavailable; answer them with
// WriteError. Authorize does the same without touching the request, and
// applies guards.
func (p *Plugin) Authenticate(r *http.Request) (*http.Request, error) {
	v := p.Authorize(r)
	if v.Identity == nil {
		return r, v.Err
	}
	return r.WithContext(NewContext(r.Context(), v.Identity)), nil
}

// Middleware requires a valid token on every request except those whose
// path is in Config.ExcludedPaths (exact match) and, with IncludeRoutes,
// those under AuthPrefix (the login routes must be reachable without a
// token), and passes the Identity to next in the request context.
func (p *Plugin) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.skipsAuth(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		v := p.Authorize(r)
		if !v.Allowed() {
			p.WriteVerdict(w, r, v)
			return
		}
		v.SetCookies(w)
		next.ServeHTTP(w, r.WithContext(NewContext(r.Context(), v.Identity)))
	})
}

// skipsAuth reports whether Middleware lets path through unauthenticated.
func (p *Plugin) skipsAuth(path string) bool {
	if _, skip := p.excluded[path]; skip {
		return true
	}
	return p.OwnsPath(path)
}

// OwnsPath reports whether path belongs to the plugin's own routes (see
// Routes): IncludeRoutes is on and path is AuthPrefix or below it
// ("/auth", "/auth/login"; not "/authx").
func (p *Plugin) OwnsPath(path string) bool {
	return p.cfg.IncludeRoutes && isUnder(path, p.cfg.AuthPrefix)
}

// isUnder reports whether path is prefix itself or a path below it.
func isUnder(path, prefix string) bool {
	return path == prefix || (len(path) > len(prefix) && strings.HasPrefix(path, prefix) && path[len(prefix)] == '/')
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
	problem.Write(w, http.StatusInternalServerError, "internal error")
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

// CookieNames lists the cookies the plugin reads or sets: Config.CookieName
// (the token cookie of TokenLocationCookie, which the login routes also
// set), with IncludeRoutes LoginStateCookie, and with Config.Session the
// session cookie and its chunks (SessionCookieNames). A proxy in front of
// an application keeps the application from setting or clearing them.
func (p *Plugin) CookieNames() []string {
	names := []string{p.cfg.CookieName}
	if p.cfg.IncludeRoutes {
		names = append(names, LoginStateCookie)
	}
	if p.sessions != nil {
		names = append(names, p.sessions.cookieNames()...)
	}
	return names
}
