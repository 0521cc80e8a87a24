// Package idp protects net/http handlers with bearer JWTs issued by an
// OpenID Connect provider with Keycloak-style realms.
//
// A Plugin validates access tokens (signature against the provider's cached
// JSON Web Key Set, algorithm, issuer, audience, expiry), puts the identity
// in the request context, and offers guards on realm roles, client roles and
// scopes. Optionally it serves the login, callback, logout and refresh routes
// of the authorization-code flow.
//
//	p, err := idp.New(ctx, idp.Config{
//		ServerURL: "https://sso.example.com",
//		Realm:     "demo",
//		ClientID:  "shortener",
//	})
//	if err != nil { ... }
//	mux := http.NewServeMux()
//	mux.Handle("GET /me", p.WithUser(func(w http.ResponseWriter, r *http.Request, u *idp.User) {
//		fmt.Fprintln(w, "hello", u.PreferredUsername)
//	}))
//	mux.Handle("POST /admin/", p.Require(idp.RequireRoles(idp.MatchAll, "admin"))(adminHandler))
//
// # Security model
//
// Keys come only from the provider's JWKS found by discovery from
// ServerURL and Realm; token headers such as jku, x5u and jwk are ignored,
// tokens with a crit header are rejected, and only asymmetric algorithms listed
// in Config.Algorithms are accepted. Keycloak ID, refresh and offline tokens
// are rejected by their typ claim. A token whose kid is unknown triggers at
// most one key-set refetch per Config.UnknownKIDRefreshInterval for the whole
// process; requests never wait on that limit, they fail fast instead.
package idp
