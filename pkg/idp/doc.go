// Package idp protects net/http handlers with bearer JWTs issued by an
// OpenID Connect provider: a Keycloak realm (Config.ServerURL and
// Config.Realm), or any provider named by its issuer (Config.IssuerURL,
// whose endpoints all come from its discovery document).
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
// # Which entry point
//
// Protecting handlers: Middleware (every path), Require with guards (some
// handlers), or the With* adapters (a handler that declares the identity
// it reads). They answer refusals themselves.
//
// Deciding without answering (a proxy, a framework adapter, a handler
// that must choose its own answer): Authorize, then WriteVerdict for a
// refusal, or your own answer from the Verdict's Outcome, Status and
// Detail. Authenticate is Authorize without guards for code that wants a
// request whose context carries the Identity, or an error; WriteError
// answers that error as WriteVerdict(w, r, VerdictOf(err)) would. Verify
// checks a token that did not come with a request (a message, a
// WebSocket frame); TokenFromRequest only extracts one.
//
// A proxy in front of an application also needs the plugin's cookies and
// routes: Cookies returns them as one value (CookieSet).
//
// # Claim mapping
//
// Config.Claims (a ClaimMapping) says where the username, e-mail, roles,
// groups and scopes are read: PresetKeycloak (the default:
// preferred_username, email, realm_access.roles, groups when present,
// scope else scp; read leniently, as always, at no extra cost) or
// PresetGeneric (username from preferred_username, else email, else sub;
// email; roles; groups; scope as a space-separated string, else scp as a
// string or an array), each field overridable by a claim path. Mapped
// fields are strict: a claim of the wrong type, or a name given twice,
// makes the token invalid. The guards (RequireRoles, RequireScopes,
// RequireGroups) and User read the mapped values; client roles always
// come from resource_access.
//
// A claim path (ParseClaimPath) is a top-level claim name, nested by '.'
// (realm_access.roles); a path that contains ':' or '/' and no '[' is one
// name, dots included (https://example.com/roles,
// urn:zitadel:iam:org:project:roles); a JSON string in brackets is one
// name whatever it holds (["a.b"], ["https://example.com/app"].teams);
// keys(P) names the keys of the object at P. TokenPayload.ClaimAt reads
// any claim by path.
//
// # Several issuers
//
// Config.Issuers (TrustedIssuer values) trusts further issuers beside the
// primary one (Config's own, named Config.IssuerName, "default" unless
// set), each with its own audiences, algorithms, claim mapping, key cache
// and unknown-kid budget. A bearer token is routed by its exact iss claim,
// before any signature work, to the issuer it names: a key of one issuer
// never verifies a token that names another, and a token naming no
// trusted issuer is refused (ErrInvalidToken, "wrong issuer") without any
// key fetch (Stats.UnknownIssuers counts them). User.IssuerName names the
// issuer of a token; RequireIssuers admits the tokens of some issuers
// only. Browser sign-in, sessions, the /auth routes, back-channel logout
// and service tokens use the primary issuer. Ready waits for the keys of
// every issuer; Stats.Issuers reports each one's keys.
//
// # The /auth routes
//
// With Config.IncludeRoutes, Plugin.Routes serves the authorization-code
// flow (PKCE S256, state and nonce in a sealed, single-use cookie),
// answering JSON token documents. With prefix = Config.AuthPrefix:
//
//   - GET {prefix}/login[?return_to=/path]: 302 to the provider's
//     authorization endpoint with response_type=code, Config.Scopes (always
//     with openid), Config.RedirectURI (never derived from Host or
//     X-Forwarded-* headers), a fresh state and nonce, and PKCE S256.
//     State, nonce, verifier and return-to are sealed (AES-256-GCM, key
//     derived from Config.SessionSecret) into the HttpOnly, SameSite=Lax
//     cookie LoginStateCookie with Path=prefix, valid for LoginStateTTL and
//     Secure when the request came over TLS or RedirectURI is https.
//     return_to must be a relative path on this site ("/reports?x=1"; see
//     the rules in internal/authflow/returnto.go), or an absolute URL on a host of
//     Config.AllowedRedirectHosts; it is handed back in the callback's
//     document for the client to navigate to, never redirected to. On an
//     app's host (another host than RedirectURI's, allowed by
//     Config.AllowedRedirectHosts), a relative return_to (or none: "/")
//     is that host's page, and the login-state cookie takes
//     SessionConfig.CookieDomain so that the callback host reads it;
//     without a cookie domain the route sends the browser to the login
//     route of the callback host (see LoginURLFor).
//   - GET {prefix}/callback: checks state against the cookie (on a
//     mismatch, a missing, tampered or expired cookie: 400, and the
//     provider is not called) and the RFC 9207 iss parameter when
//     present, accepts each login once (a replayed
//     callback is 400), answers a provider error= with 401 for
//     access_denied, login_required, consent_required,
//     interaction_required and account_selection_required, 400 for the
//     others, exchanges the code with the PKCE verifier, verifies the ID
//     token (signature with the plugin's key cache, issuer, audience,
//     expiry, nonce, iat, sub, azp, at_hash) and the access token, and
//     answers the JSON token document {access_token, refresh_token,
//     id_token, token_type, expires_in[, return_to]} with Cache-Control:
//     no-store. With TokenLocationCookie it also sets the access-token
//     cookie (HttpOnly, SameSite=Lax, Path=/, Max-Age=expires_in).
//   - POST {prefix}/refresh with JSON {"refresh_token": "..."}: the same
//     document with new tokens; the new access token is verified first; a
//     refusal by the provider (invalid_grant, ...) is 401.
//   - POST {prefix}/logout with an optional JSON {"refresh_token": "..."}:
//     ends the session at the provider (at a Keycloak realm, a back-channel
//     POST of the refresh token to the end-session endpoint, as Keycloak
//     accepts it; at any provider, RFC 7009 revocation; both with the
//     client's credentials), clears the
//     access-token and login-state cookies and answers 200
//     {"logged_out": true, "provider_logout": "done"|"failed"|"skipped"}.
//
// POST bodies must be application/json (else 415), at most 64 KiB (else
// 413), well-formed with the required fields (else 400), and not
// cross-site (else 403): the check is net/http's CrossOriginProtection
// (Sec-Fetch-Site, else Origin against Host), with RedirectURI's origin
// trusted as well. Other paths under the prefix are 404, other methods 405
// with Allow. Every error is application/problem+json. Calls to the
// provider use Config.HTTPClient and are bounded by Config.HTTPTimeout;
// while the provider has not been discovered yet, login, callback and
// refresh answer 503 with Retry-After.
//
// Replay protection of the callback combines the provider's single-use
// authorization code with a per-process set of completed states, kept
// until the login state expires (at most 65536 entries). With several
// replicas a copied state cookie could be replayed once on each other
// replica; the provider's refusal of the reused code still stops it.
//
// # Pages for browsers
//
// A browser navigation (WantsPage) gets an HTML page for a refusal or an
// error of the /auth routes, with the status and headers the program's
// problem+json answer has. Config.Pages gives them the site's own
// template, stylesheet, logo and colours (NewPages, PagesConfig), read and
// checked once: a template error is a configuration error, never a 500.
//
// # Service tokens
//
// Plugin.ClientCredentials returns an oauth2.TokenSource for the
// client_credentials grant at the provider's token endpoint, and ForwardToken
// wraps an http.RoundTripper so that calls to a downstream API carry the
// caller's own token (RawTokenFrom).
//
// # Security model
//
// Keys come only from the provider's JWKS found by discovery from
// IssuerURL, or ServerURL and Realm; the discovery document must name the
// configured issuer byte for byte (else ErrDiscovery, and the plugin stays
// not ready), as every token's iss must; token headers such as jku, x5u and jwk are ignored,
// tokens with a crit header are rejected, and only asymmetric algorithms listed
// in Config.Algorithms are accepted. Keycloak ID, refresh and offline tokens
// are rejected by their typ claim. A sender-constrained token (a cnf
// claim: DPoP's cnf.jkt, RFC 9449; a certificate's cnf["x5t#S256"], RFC
// 8705; Keycloak's typ "DPoP") passes only with its binding, checked on
// every request whatever Config.DPoP.Mode: a DPoP proof by its key under
// the DPoP scheme, or the client certificate it names; any other cnf, or
// the token without its proof, is refused with ErrSenderConstrained
// (never accepted as a bearer token: the downgrade RFC 9449 §7.2 warns
// about). Tokens must be canonical (base64url
// without padding or stray bits); claim names are matched exactly and a
// name given twice in any object of the header or the claims makes the
// token invalid, whatever would read it; exp, nbf and iat must be JSON numbers. A
// token whose kid is unknown triggers at most one key-set refetch per
// Config.UnknownKIDRefreshInterval; requests never wait on that limit (they
// fail fast, and one refetch is scheduled for the end of the interval).
package idp
