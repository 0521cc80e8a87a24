package idp

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Limits and names of the /auth routes.
const (
	// LoginStateTTL is how long a login may take between GET login and
	// GET callback.
	LoginStateTTL = 10 * time.Minute
	// LoginStateCookie is the name of the sealed login-state cookie
	// (state, nonce, PKCE verifier, return-to), scoped to Config.AuthPrefix.
	LoginStateCookie = "idp_login"
	// maxAuthBody bounds the JSON bodies of logout and refresh.
	maxAuthBody = 64 << 10
	// maxUsedStates bounds the memory of completed logins (replay guard).
	maxUsedStates = 1 << 16
)

// loginState is sealed into the LoginStateCookie by GET login.
type loginState struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	ReturnTo string `json:"r,omitempty"`
	Exp      int64  `json:"e"`
}

// tokenDocument is the JSON answer of callback and refresh.
type tokenDocument struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token,omitempty"`
	IDToken      string `json:"id_token,omitempty"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	ReturnTo     string `json:"return_to,omitempty"`
}

// Routes returns the handler of the authorization-code flow. It matches the
// full request path, so mount it at Config.AuthPrefix + "/" without
// stripping the prefix:
//
//	mux.Handle(cfg.AuthPrefix+"/", p.Routes())
//
// It serves, with prefix = Config.AuthPrefix:
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
//     the rules in safeReturnTo); it is handed back in the callback's
//     document for the client to navigate to, never redirected to.
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
//     ends the session at the provider (a back-channel POST of the refresh
//     token to the end-session endpoint, as Keycloak accepts it, and RFC
//     7009 revocation, both with the client's credentials), clears the
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
// When Config.IncludeRoutes is false, Routes returns a handler that answers
// 404 problem+json to every request, so mounting it unconditionally is
// safe. Routes returns the same handler on every call.
func (p *Plugin) Routes() http.Handler {
	p.routesOnce.Do(func() { p.routes = p.newRoutes() })
	return p.routes
}

func (p *Plugin) newRoutes() http.Handler {
	if !p.cfg.IncludeRoutes {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeProblem(w, http.StatusNotFound, "the authentication routes are not enabled")
		})
	}
	seal, err := newSealer(p.cfg.SessionSecret, "login-state")
	if err != nil { // cannot happen with a validated config
		p.cfg.Logger.Error("idp: auth routes disabled", "error", err)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeProblem(w, http.StatusInternalServerError, "internal error")
		})
	}
	redirect, _ := url.Parse(p.cfg.RedirectURI) // validated by New
	if want := strings.TrimSuffix(p.cfg.AuthPrefix, "/") + "/callback"; redirect.Path != want {
		// Legitimate behind a proxy that rewrites paths, but the usual cause
		// is a typo: the state cookie (Path=prefix) would not come back.
		p.cfg.Logger.Warn("idp: redirect_uri does not point at the callback route", "redirect_path", redirect.Path, "callback_path", want)
	}
	scopes := []string{oidc.ScopeOpenID}
	for _, s := range p.cfg.Scopes {
		if s != "" && !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	prefix := p.cfg.AuthPrefix
	if prefix == "/" {
		prefix = ""
	}
	a := &authRoutes{
		p:      p,
		cfg:    p.cfg,
		seal:   seal,
		used:   newUsedSet(maxUsedStates),
		scopes: scopes,
		verifier: oidc.NewVerifier(p.issuer, newOIDCKeySet(p), &oidc.Config{
			ClientID:             p.cfg.ClientID,
			SupportedSigningAlgs: p.cfg.Algorithms,
			Now:                  p.cfg.Now,
		}),
		httpsRedirect: redirect.Scheme == "https",
		cookiePath:    p.cfg.AuthPrefix,
		paths: map[string]route{
			prefix + "/login":    {http.MethodGet, (*authRoutes).login},
			prefix + "/callback": {http.MethodGet, (*authRoutes).callback},
			prefix + "/logout":   {http.MethodPost, (*authRoutes).logout},
			prefix + "/refresh":  {http.MethodPost, (*authRoutes).refresh},
		},
	}
	if p.sessions != nil {
		a.paths[prefix+"/logout"] = route{"GET, POST", (*authRoutes).sessionLogout}
		a.paths[prefix+"/backchannel-logout"] = route{http.MethodPost, (*authRoutes).backchannelLogout}
	}
	return a
}

type route struct {
	method string // one method, or a list ("GET, POST")
	serve  func(*authRoutes, http.ResponseWriter, *http.Request)
}

// authRoutes serves the /auth routes; see Plugin.Routes.
type authRoutes struct {
	p             *Plugin
	cfg           Config
	seal          *sealer
	used          *usedSet
	scopes        []string
	verifier      *oidc.IDTokenVerifier
	httpsRedirect bool
	cookiePath    string
	paths         map[string]route
}

func (a *authRoutes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt, ok := a.paths[r.URL.Path]
	if !ok {
		writeProblem(w, http.StatusNotFound, "no such authentication route")
		return
	}
	if r.Method != rt.method && !(strings.Contains(rt.method, ", ") && slices.Contains(strings.Split(rt.method, ", "), r.Method)) {
		w.Header().Set("Allow", rt.method)
		writeProblem(w, http.StatusMethodNotAllowed, "method not allowed; use "+rt.method)
		return
	}
	rt.serve(a, w, r)
}

// oauthConfig builds the x/oauth2 configuration from the discovered
// endpoints, or returns nil when discovery has not completed yet.
func (a *authRoutes) oauthConfig() *oauth2.Config { return a.p.oauthConfig(a.scopes) }

// oauthConfig builds the x/oauth2 configuration of the client from the
// discovered endpoints, or returns nil when discovery has not completed.
func (p *Plugin) oauthConfig(scopes []string) *oauth2.Config {
	meta := p.keys.meta.Load()
	if meta == nil {
		return nil
	}
	return &oauth2.Config{
		ClientID:     p.cfg.ClientID,
		ClientSecret: p.cfg.ClientSecret,
		Endpoint: oauth2.Endpoint{
			AuthURL:   meta.AuthorizationEndpoint,
			TokenURL:  meta.TokenEndpoint,
			AuthStyle: oauth2.AuthStyleInParams,
		},
		RedirectURL: p.cfg.RedirectURI,
		Scopes:      scopes,
	}
}

// providerCtx bounds a call to the provider by HTTPTimeout and makes
// x/oauth2 use the plugin's HTTP client.
func (a *authRoutes) providerCtx(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, a.cfg.HTTPTimeout)
	return context.WithValue(ctx, oauth2.HTTPClient, a.cfg.HTTPClient), cancel
}

func (a *authRoutes) login(w http.ResponseWriter, r *http.Request) {
	conf := a.oauthConfig()
	if conf == nil {
		writeUnavailable(w)
		return
	}
	var returnTo string
	q := r.URL.Query()
	name := "return_to"
	if _, ok := q["rd"]; ok {
		name = "rd" // oauth2-proxy's name, as ingress-nginx's auth-signin sends it
	}
	if vals, ok := q[name]; ok {
		if len(vals) != 1 || len(q["return_to"])+len(q["rd"]) != 1 {
			writeProblem(w, http.StatusBadRequest, "return_to given more than once")
			return
		}
		if returnTo, ok = safeReturnTo(a.sameOrigin(vals[0])); !ok {
			writeProblem(w, http.StatusBadRequest, "return_to must be a relative path on this site")
			return
		}
	}
	exp := a.cfg.Now().Add(LoginStateTTL)
	st := loginState{
		State:    rand.Text() + rand.Text(), // 2×128 bits
		Nonce:    rand.Text() + rand.Text(),
		Verifier: oauth2.GenerateVerifier(),
		ReturnTo: returnTo,
		Exp:      exp.Unix(),
	}
	sealed, err := a.seal.seal(LoginStateCookie, st, exp)
	if err != nil {
		a.cfg.Logger.Error("idp: login: sealing the state failed", "error", err)
		writeProblem(w, http.StatusInternalServerError, "internal error")
		return
	}
	http.SetCookie(w, a.stateCookie(r, sealed, int(LoginStateTTL/time.Second)))
	w.Header().Set("Cache-Control", "no-store")
	u := conf.AuthCodeURL(st.State, oauth2.S256ChallengeOption(st.Verifier), oidc.Nonce(st.Nonce))
	http.Redirect(w, r, u, http.StatusFound)
}

func (a *authRoutes) callback(w http.ResponseWriter, r *http.Request) {
	// The login state is single-use: the cookie goes whatever the outcome.
	http.SetCookie(w, a.stateCookie(r, "", -1))
	w.Header().Set("Cache-Control", "no-store")

	cs := r.CookiesNamed(LoginStateCookie)
	if len(cs) != 1 {
		writeProblem(w, http.StatusBadRequest, "no login in progress: the login state cookie is missing or ambiguous")
		return
	}
	now := a.cfg.Now()
	var st loginState
	switch err := a.seal.open(LoginStateCookie, cs[0].Value, now, &st); {
	case errors.Is(err, errSealedExpired):
		writeProblem(w, http.StatusBadRequest, "the login has expired; start again")
		return
	case err != nil:
		writeProblem(w, http.StatusBadRequest, "the login state cookie is invalid")
		return
	}
	q := r.URL.Query()
	if len(q["state"]) != 1 || subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(st.State)) != 1 {
		writeProblem(w, http.StatusBadRequest, "state mismatch")
		return
	}
	// RFC 9207: a provider that names itself in the answer must be ours
	// (mix-up attacks); Keycloak sends iss.
	if iss, ok := q["iss"]; ok && (len(iss) != 1 || iss[0] != a.p.issuer) {
		writeProblem(w, http.StatusBadRequest, "the answer comes from another identity provider")
		return
	}
	first := a.used.use(st.State, time.Unix(st.Exp, 0), now)
	if first && a.p.sessions != nil && a.p.sessions.backend != nil {
		// Once across replicas, not only on this one.
		var err error
		if first, err = a.p.sessions.useLoginState(r.Context(), st.State, time.Unix(st.Exp, 0)); err != nil {
			a.cfg.Logger.Warn("idp: callback: the session store is unavailable", "error", err)
			writeUnavailable(w)
			return
		}
	}
	if !first {
		writeProblem(w, http.StatusBadRequest, "this login has already been completed")
		return
	}
	if e := q.Get("error"); e != "" {
		code := sanitizeErrorCode(e)
		a.cfg.Logger.Info("idp: login refused by the identity provider", "error", code)
		status := http.StatusBadRequest
		switch code {
		case "access_denied", "login_required", "consent_required", "interaction_required", "account_selection_required":
			status = http.StatusUnauthorized
		}
		writeProblem(w, status, "the identity provider refused the login: "+code)
		return
	}
	code := q.Get("code")
	if code == "" || len(q["code"]) != 1 {
		writeProblem(w, http.StatusBadRequest, "the authorization code is missing")
		return
	}
	conf := a.oauthConfig()
	if conf == nil {
		writeUnavailable(w)
		return
	}
	ctx, cancel := a.providerCtx(r.Context())
	defer cancel()
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(st.Verifier))
	if err != nil {
		a.providerFailure(w, "code exchange", err, "the identity provider refused the authorization code")
		return
	}
	rawID, _ := tok.Extra("id_token").(string)
	if rawID == "" {
		a.cfg.Logger.Warn("idp: callback: the token response has no id_token")
		writeProblem(w, http.StatusBadGateway, "the identity provider returned no ID token")
		return
	}
	if err := a.verifyIDToken(ctx, rawID, st.Nonce, tok.AccessToken); err != nil {
		a.cfg.Logger.Warn("idp: callback: ID token rejected", "error", err)
		writeProblem(w, http.StatusUnauthorized, "the ID token is invalid")
		return
	}
	id, ok := a.checkAccessToken(ctx, w, tok.AccessToken)
	if !ok {
		return
	}
	a.cfg.Logger.Info("idp: login completed", "sub", id.Payload.Subject)
	if a.p.sessions != nil {
		a.startSession(w, r, tok, rawID, id, st.ReturnTo)
		return
	}
	a.writeTokens(w, r, tok, rawID, st.ReturnTo)
}

func (a *authRoutes) refresh(w http.ResponseWriter, r *http.Request) {
	var body struct {
		RefreshToken *string `json:"refresh_token"`
	}
	if !a.checkPOST(w, r) || !decodeBody(w, r, &body, false) {
		return
	}
	if body.RefreshToken == nil || *body.RefreshToken == "" {
		writeProblem(w, http.StatusBadRequest, "refresh_token is required")
		return
	}
	if !validOpaqueToken(*body.RefreshToken) {
		writeProblem(w, http.StatusBadRequest, "refresh_token is malformed")
		return
	}
	conf := a.oauthConfig()
	if conf == nil {
		writeUnavailable(w)
		return
	}
	ctx, cancel := a.providerCtx(r.Context())
	defer cancel()
	tok, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: *body.RefreshToken}).Token()
	if err != nil {
		a.providerFailure(w, "refresh", err, "the identity provider refused the refresh token")
		return
	}
	if _, ok := a.checkAccessToken(ctx, w, tok.AccessToken); !ok {
		return
	}
	rawID, _ := tok.Extra("id_token").(string)
	if rawID != "" {
		// The nonce of the original login is not known here (OIDC Core
		// §12.2 lets it be absent or repeated); everything else is checked.
		if err := a.verifyIDToken(ctx, rawID, "", tok.AccessToken); err != nil {
			a.cfg.Logger.Warn("idp: refresh: ID token rejected", "error", err)
			writeProblem(w, http.StatusBadGateway, "the identity provider returned an invalid ID token")
			return
		}
	}
	a.writeTokens(w, r, tok, rawID, "")
}

func (a *authRoutes) logout(w http.ResponseWriter, r *http.Request) {
	var body struct {
		RefreshToken string `json:"refresh_token"`
	}
	if !a.checkPOST(w, r) || !decodeBody(w, r, &body, true) {
		return
	}
	if body.RefreshToken != "" && !validOpaqueToken(body.RefreshToken) {
		writeProblem(w, http.StatusBadRequest, "refresh_token is malformed")
		return
	}
	http.SetCookie(w, a.stateCookie(r, "", -1))
	if a.cfg.TokenLocation == TokenLocationCookie {
		http.SetCookie(w, a.accessCookie(r, "", -1))
	}
	outcome := "skipped"
	if body.RefreshToken != "" {
		outcome = "failed"
		if a.providerLogout(r.Context(), body.RefreshToken) {
			outcome = "done"
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"logged_out": true, "provider_logout": outcome})
}

// checkAccessToken verifies a freshly issued access token as Middleware
// would, so that the routes never hand out a token this service refuses.
func (a *authRoutes) checkAccessToken(ctx context.Context, w http.ResponseWriter, raw string) (*Identity, bool) {
	id, err := a.p.verify(ctx, raw)
	switch {
	case err == nil:
		return id, true
	case errors.Is(err, ErrUnavailable):
		writeUnavailable(w)
	default:
		a.cfg.Logger.Warn("idp: the identity provider issued an access token this service refuses", "error", err)
		writeProblem(w, http.StatusBadGateway, "the identity provider issued an access token this service does not accept")
	}
	return nil, false
}

// writeTokens answers the token document, and sets the access-token cookie
// when tokens are read from a cookie.
func (a *authRoutes) writeTokens(w http.ResponseWriter, r *http.Request, tok *oauth2.Token, idToken, returnTo string) {
	expiresIn := tok.ExpiresIn
	if expiresIn <= 0 && !tok.Expiry.IsZero() {
		expiresIn = int64(time.Until(tok.Expiry) / time.Second)
	}
	if a.cfg.TokenLocation == TokenLocationCookie {
		maxAge := int(max(expiresIn, 0)) // 0: a session cookie
		http.SetCookie(w, a.accessCookie(r, tok.AccessToken, maxAge))
	}
	writeJSON(w, http.StatusOK, tokenDocument{
		AccessToken:  tok.AccessToken,
		RefreshToken: tok.RefreshToken,
		IDToken:      idToken,
		TokenType:    "Bearer",
		ExpiresIn:    expiresIn,
		ReturnTo:     returnTo,
	})
}

// providerFailure answers a failed call to the token endpoint: a refusal
// (an OAuth error response with a 4xx status) is 401 with refusal as
// detail, anything else (unreachable, timeout, 5xx, garbage) is 502. The
// provider's answer is logged by its error code only.
func (a *authRoutes) providerFailure(w http.ResponseWriter, what string, err error, refusal string) {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		if status < 400 || status >= 500 {
			a.cfg.Logger.Warn("idp: "+what+": identity provider failed", "status", status)
			writeProblem(w, http.StatusBadGateway, "the identity provider failed")
			return
		}
		a.cfg.Logger.Info("idp: "+what+": refused by the identity provider", "status", status, "error", sanitizeErrorCode(re.ErrorCode))
		writeProblem(w, http.StatusUnauthorized, refusal)
		return
	}
	a.cfg.Logger.Warn("idp: "+what+": identity provider unreachable", "error", err)
	writeProblem(w, http.StatusBadGateway, "the identity provider could not be reached")
}

// sameOrigin turns an absolute return-to URL on the site's own origin
// (RedirectURI's scheme and host, as an ingress's sign-in redirect sends
// it: "https://app.example/page?x=1") into its path and query; anything
// else is returned as is, for safeReturnTo to judge.
func (a *authRoutes) sameOrigin(s string) string {
	if !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
		return s
	}
	u, err := url.Parse(s)
	redirect, rerr := url.Parse(a.cfg.RedirectURI)
	if err != nil || rerr != nil || u.User != nil || u.Fragment != "" ||
		!strings.EqualFold(u.Scheme, redirect.Scheme) || !strings.EqualFold(u.Host, redirect.Host) {
		return s
	}
	rest := s[strings.Index(s, "://")+3:]
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[i:] // the path and query exactly as sent
	}
	return "/"
}
