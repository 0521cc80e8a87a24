package idp

import (
	"net/http"
)

// Authenticate extracts and verifies the request's token and returns a
// shallow copy of r whose context carries the Identity (see IdentityFrom,
// UserFrom, PayloadFrom, RawTokenFrom). Errors wrap ErrNoToken,
// ErrInvalidRequest, ErrInvalidToken or ErrUnavailable; answer them with
// WriteError. Authorize does the same without touching the request, and
// applies guards.
func (p *Plugin) Authenticate(r *http.Request) (*http.Request, error) {
	v := p.authorize(r, nil)
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
		v := p.authorize(r, nil)
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
	return p.ownsPath(path)
}

// Require returns middleware that authenticates the request (unless an
// enclosing Middleware already did) and lets it through only when every
// guard allows the user; otherwise it answers 403 insufficient_scope (or
// the 401/400/503 of a failed authentication).
func (p *Plugin) Require(guards ...Guard) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			v := p.authorize(r, guards)
			if !v.Allowed() {
				p.WriteVerdict(w, r, v)
				return
			}
			v.SetCookies(w)
			next.ServeHTTP(w, withVerdict(r, v))
		})
	}
}

// WithUser adapts a handler that declares the user: the returned handler
// authenticates the request (unless an enclosing Middleware already did)
// and answers 401/503 itself when that fails, so declaring the identity is
// what protects the handler.
func (p *Plugin) WithUser(h func(w http.ResponseWriter, r *http.Request, u *User)) http.Handler {
	return p.withIdentity(func(w http.ResponseWriter, r *http.Request, id *Identity) { h(w, r, id.User) })
}

// WithPayload is WithUser for handlers that declare the token payload.
func (p *Plugin) WithPayload(h func(w http.ResponseWriter, r *http.Request, tp *TokenPayload)) http.Handler {
	return p.withIdentity(func(w http.ResponseWriter, r *http.Request, id *Identity) { h(w, r, id.Payload) })
}

// WithRawToken is WithUser for handlers that declare the raw token.
func (p *Plugin) WithRawToken(h func(w http.ResponseWriter, r *http.Request, raw string)) http.Handler {
	return p.withIdentity(func(w http.ResponseWriter, r *http.Request, id *Identity) { h(w, r, id.Raw) })
}

// WithIdentity is WithUser for handlers that declare the whole Identity.
func (p *Plugin) WithIdentity(h func(w http.ResponseWriter, r *http.Request, id *Identity)) http.Handler {
	return p.withIdentity(h)
}

func (p *Plugin) withIdentity(h func(w http.ResponseWriter, r *http.Request, id *Identity)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := p.authorize(r, nil)
		if !v.Allowed() {
			p.WriteVerdict(w, r, v)
			return
		}
		v.SetCookies(w)
		h(w, withVerdict(r, v), v.Identity)
	})
}
