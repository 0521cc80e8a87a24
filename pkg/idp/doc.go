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
// # One decision
//
// Plugin.Authorize authenticates a request and applies guards without
// writing anything; it returns a Verdict: an Outcome (Allowed, NoToken,
// InvalidRequest, InvalidToken, Forbidden, Unavailable), the verified
// Identity (user, claims and raw token in one value) and the status and
// detail of the answer. Plugin.WriteVerdict writes that answer as RFC 6750
// and RFC 9457 want it. Middleware, Require, the With* adapters and
// pkg/proxy all decide through Authorize; NewContext and IdentityFrom carry
// the Identity in a context.
//
// # Login routes and service tokens
//
// With Config.IncludeRoutes, Plugin.Routes serves GET {AuthPrefix}/login and
// /callback (authorization code with PKCE S256, state and nonce in a sealed,
// single-use cookie) and POST /refresh and /logout, answering JSON token
// documents. Plugin.ClientCredentials returns an oauth2.TokenSource for the
// client_credentials grant at the realm's token endpoint, and ForwardToken
// wraps an http.RoundTripper so that calls to a downstream API carry the
// caller's own token (RawTokenFrom).
//
// # Security model
//
// Keys come only from the provider's JWKS found by discovery from
// ServerURL and Realm; token headers such as jku, x5u and jwk are ignored,
// tokens with a crit header are rejected, and only asymmetric algorithms listed
// in Config.Algorithms are accepted. Keycloak ID, refresh and offline tokens
// are rejected by their typ claim. Tokens must be canonical (base64url
// without padding or stray bits); claim names are matched exactly and a
// claim named twice is refused; exp, nbf and iat must be JSON numbers. A
// token whose kid is unknown triggers at most one key-set refetch per
// Config.UnknownKIDRefreshInterval; requests never wait on that limit (they
// fail fast, and one refetch is scheduled for the end of the interval).
package idp
