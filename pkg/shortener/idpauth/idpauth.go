// Package idpauth identifies the callers of a shortener.Handler in-process
// with pkg/idp: bearer tokens (or the token cookie) are verified by an
// idp.Plugin, the token's subject owns the links it creates, and its realm
// roles are the caller's roles. It is the alternative to running the
// shortener behind idp-proxy with shortener.OwnerFromHeader. Behind
// idp-proxy, AssertionOptions verifies the proxy's identity assertion
// instead of trusting identity headers.
package idpauth

import (
	"net/http"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// HandlerOptions returns handler options whose Authenticate, Owner and
// Roles come from p; set the other fields on the result. Creating links
// (POST /shorten, POST /links) needs a valid access token holding one of
// createRoles (any valid token when none are given); the other routes
// that need an identity accept any valid token. Redirects, /health and
// the page stay public, and identity headers of requests are ignored.
func HandlerOptions(p *idp.Plugin, createRoles ...string) shortener.HandlerOptions {
	var guards []idp.Guard
	if len(createRoles) > 0 {
		guards = append(guards, idp.RequireRoles(idp.MatchAny, createRoles...))
	}
	requireCreate, requireToken := p.Require(guards...), p.Require()
	return shortener.HandlerOptions{
		// The handler applies it to each route that needs an identity.
		Authenticate: func(next http.Handler) http.Handler {
			create, other := requireCreate(next), requireToken(next)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					create.ServeHTTP(w, r)
					return
				}
				other.ServeHTTP(w, r)
			})
		},
		Owner:       Owner,
		Roles:       Roles,
		DisplayName: DisplayName,
	}
}

// DisplayName returns the preferred username of the request's verified
// token (the claim mapping's username); "" without one.
func DisplayName(r *http.Request) string {
	if u, ok := idp.UserFrom(r.Context()); ok {
		return u.PreferredUsername
	}
	return ""
}

// Owner returns the subject of the request's verified token; "" without
// one.
func Owner(r *http.Request) string {
	if u, ok := idp.UserFrom(r.Context()); ok {
		return u.Sub
	}
	return ""
}

// Roles returns the realm roles of the request's verified token.
func Roles(r *http.Request) []string {
	if u, ok := idp.UserFrom(r.Context()); ok {
		return u.RealmRoles
	}
	return nil
}
