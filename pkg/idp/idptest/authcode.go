package idptest

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/idp-proxy/idp-proxy/internal/jsondoc"
)

// The authorization-code flow: a login without a form, codes bound to the
// client, redirect URI and PKCE challenge, sessions, and refresh tokens
// with rotation, revocation and end-session.

func (u User) withDefaults() User {
	if u.Username == "" {
		u.Username = "alice"
	}
	if u.Sub == "" {
		u.Sub = "user-" + u.Username
	}
	if u.Email == "" {
		u.Email = u.Username + "@example.com"
	}
	return u
}

// ClaimsHook may change the claims of every token the server issues from
// its token endpoint before they are signed. typ is Keycloak's typ claim:
// "Bearer" (access tokens), "ID" or "Refresh" (JWT refresh tokens only).
// Set a claim to nil to leave it out (deleting it would bring back Mint's
// default for iss, iat, exp, jti, typ and sub).
type ClaimsHook func(typ string, claims map[string]any)

// flowState holds the state of logins; guarded by its own mutex.
type flowState struct {
	mu         sync.Mutex
	user       User
	loginError string
	hook       ClaimsHook
	codes      map[string]*authCode
	refresh    map[string]*refreshEntry // by refresh-token ID (jti or the opaque value)
	sessions   map[string]*session
}

type session struct {
	id       string
	user     User
	client   string
	scope    string
	nonce    string
	authTime time.Time
}

type authCode struct {
	sess        *session
	redirectURI string
	challenge   string
	exp         time.Time
}

type refreshEntry struct {
	sess *session
	exp  time.Time
}

func (f *flowState) init(o Options) {
	f.user = o.User
	f.loginError = o.LoginError
	f.codes = make(map[string]*authCode)
	f.refresh = make(map[string]*refreshEntry)
	f.sessions = make(map[string]*session)
}

func (s *Server) routeFlow(base string) {
	s.mux.HandleFunc("GET "+base+s.authPath(), s.authorize)
	s.mux.HandleFunc("POST "+base+"/revoke", s.revoke)
	s.mux.HandleFunc("POST "+base+"/logout", s.backchannelLogout)
	s.mux.HandleFunc("GET "+base+"/logout", s.frontchannelLogout)
}

// SetLoginError makes the authorization endpoint refuse every login with
// the OAuth error code (e.g. "access_denied"); "" lets logins succeed.
func (s *Server) SetLoginError(code string) {
	s.flow.mu.Lock()
	s.flow.loginError = code
	s.flow.mu.Unlock()
}

// SetUser changes the user logged in by the authorization endpoint.
func (s *Server) SetUser(u User) {
	s.flow.mu.Lock()
	s.flow.user = u.withDefaults()
	s.flow.mu.Unlock()
}

// SetClaimsHook installs h (nil removes it); see ClaimsHook. Tests use it
// to issue a wrong nonce, a wrong at_hash or another audience.
func (s *Server) SetClaimsHook(h ClaimsHook) {
	s.flow.mu.Lock()
	s.flow.hook = h
	s.flow.mu.Unlock()
}

func (s *Server) applyHook(typ string, claims map[string]any) {
	s.flow.mu.Lock()
	h := s.flow.hook
	s.flow.mu.Unlock()
	if h != nil {
		h(typ, claims)
	}
}

// Sessions counts the active login sessions (ended by end-session).
func (s *Server) Sessions() int {
	s.flow.mu.Lock()
	defer s.flow.mu.Unlock()
	return len(s.flow.sessions)
}

// redirectAllowed reports whether c accepts uri as a redirect URI.
func redirectAllowed(c Client, uri string) bool {
	u, err := url.Parse(uri)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
		return false
	}
	return len(c.RedirectURIs) == 0 || slices.Contains(c.RedirectURIs, uri)
}

// authorize is the authorization endpoint: it logs the configured user in
// at once and redirects to redirect_uri with code and state, or with
// error=... when a login error is set. Unknown clients and redirect URIs
// it does not accept get a 400 page, never a redirect.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	c, known := s.clients[q.Get("client_id")]
	s.mu.Unlock()
	if !known {
		http.Error(w, "Client not found.", http.StatusBadRequest)
		return
	}
	redirectURI := q.Get("redirect_uri")
	if !redirectAllowed(c, redirectURI) {
		http.Error(w, "Invalid parameter: redirect_uri", http.StatusBadRequest)
		return
	}
	back := func(params url.Values) {
		params.Set("iss", s.Issuer)
		if st := q.Get("state"); st != "" {
			params.Set("state", st)
		}
		sep := "?"
		if strings.Contains(redirectURI, "?") {
			sep = "&"
		}
		http.Redirect(w, r, redirectURI+sep+params.Encode(), http.StatusFound)
	}
	refuse := func(code, desc string) {
		back(url.Values{"error": {code}, "error_description": {desc}})
	}
	switch {
	case q.Get("response_type") != "code":
		refuse("unsupported_response_type", "Client is not allowed to initiate browser login with given response_type.")
		return
	case q.Get("code_challenge") == "":
		refuse("invalid_request", "Missing parameter: code_challenge")
		return
	case q.Get("code_challenge_method") != "S256":
		refuse("invalid_request", "Invalid parameter: code challenge method is not supported.")
		return
	}
	s.flow.mu.Lock()
	loginErr, user := s.flow.loginError, s.flow.user
	s.flow.mu.Unlock()
	if loginErr != "" {
		refuse(loginErr, "The test provider refuses this login.")
		return
	}
	sess := &session{
		id: randomHex(16), user: user, client: c.ID, scope: q.Get("scope"),
		nonce: q.Get("nonce"), authTime: s.now(),
	}
	code := randomHex(24)
	s.flow.mu.Lock()
	s.flow.sessions[sess.id] = sess
	s.flow.codes[code] = &authCode{
		sess: sess, redirectURI: redirectURI, challenge: q.Get("code_challenge"),
		exp: s.now().Add(s.opts.CodeTTL),
	}
	s.flow.mu.Unlock()
	back(url.Values{"code": {code}, "session_state": {sess.id}})
}

// codeGrant exchanges an authorization code: single use, same client,
// same redirect_uri, PKCE S256 verifier matching the challenge.
func (s *Server) codeGrant(w http.ResponseWriter, r *http.Request, c Client) {
	jkt, ok := s.proofKey(w, r) // before the code is spent: a nonce retry reuses it
	if !ok {
		return
	}
	code := r.PostForm.Get("code")
	s.flow.mu.Lock()
	ac := s.flow.codes[code]
	delete(s.flow.codes, code) // single use, whatever the outcome
	s.flow.mu.Unlock()
	switch {
	case ac == nil || s.now().After(ac.exp):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "Code not valid")
		return
	case ac.sess.client != c.ID:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "Auth error: code issued to another client")
		return
	case r.PostForm.Get("redirect_uri") != ac.redirectURI:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "Incorrect redirect_uri")
		return
	}
	verifier := r.PostForm.Get("code_verifier")
	if verifier == "" {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "PKCE code verifier not specified")
		return
	}
	sum := sha256.Sum256([]byte(verifier))
	if subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(ac.challenge)) != 1 {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "PKCE verification failed: Code mismatch")
		return
	}
	s.issue(w, ac.sess, jkt)
}

// refreshGrant exchanges a refresh token for new tokens and a new refresh
// token; the old one stops working (rotation).
func (s *Server) refreshGrant(w http.ResponseWriter, r *http.Request, c Client) {
	jkt, ok := s.proofKey(w, r) // before the refresh token is spent
	if !ok {
		return
	}
	id, err := s.refreshID(r.PostForm.Get("refresh_token"))
	if err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "Invalid refresh token")
		return
	}
	s.flow.mu.Lock()
	e := s.flow.refresh[id]
	if e != nil && e.sess.client == c.ID {
		delete(s.flow.refresh, id)
	}
	var active bool
	if e != nil {
		_, active = s.flow.sessions[e.sess.id]
	}
	s.flow.mu.Unlock()
	switch {
	case e == nil:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "Stale token")
	case e.sess.client != c.ID:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "Invalid refresh token. Token client and authorized client don't match")
	case !active:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "Session not active")
	case s.now().After(e.exp):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "Token is not active")
	default:
		s.issue(w, e.sess, jkt)
	}
}

// refreshID checks a refresh token's form and returns the key of its
// entry: the jti of a JWT refresh token (HS256 with the server's key, typ
// Refresh, this issuer), or the opaque value itself.
func (s *Server) refreshID(tok string) (string, error) {
	if tok == "" {
		return "", errors.New("empty")
	}
	if s.opts.OpaqueRefreshTokens {
		return tok, nil
	}
	var c struct {
		jwt.RegisteredClaims
		Typ string `json:"typ"`
	}
	_, err := jwt.ParseWithClaims(tok, &c, func(*jwt.Token) (any, error) { return s.hmacKey, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithIssuer(s.Issuer), jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(s.now))
	if err != nil {
		return "", err
	}
	if c.Typ != "Refresh" || c.ID == "" {
		return "", errors.New("not a refresh token")
	}
	return c.ID, nil
}

// issue answers a token response for sess: access token, ID token (when
// the scope has openid) with nonce, at_hash and azp, and a new refresh
// token. With jkt (the thumbprint of the key of the request's DPoP proof),
// the access token is bound to that key (RFC 9449 §5).
func (s *Server) issue(w http.ResponseWriter, sess *session, jkt string) {
	now := s.now()
	exp := now.Add(s.ttl)
	access := s.UserClaims(sess.client, sess.user.Username, sess.user.RealmRoles...)
	access["sub"] = sess.user.Sub
	access["email"] = sess.user.Email
	access["sid"], access["session_state"] = sess.id, sess.id
	access["exp"], access["iat"] = exp.Unix(), now.Unix()
	access["scope"] = strings.TrimSpace(sess.scope)
	ra := access["resource_access"].(map[string]any)
	for client, roles := range sess.user.ClientRoles {
		l := make([]any, len(roles))
		for i, r := range roles {
			l[i] = r
		}
		ra[client] = map[string]any{"roles": l}
	}
	tokenType := s.bindClaims(access, jkt)
	s.applyHook("Bearer", access)
	at, err := s.sign(MintOptions{}, access)
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error", "signing failed")
		return
	}
	resp := map[string]any{
		"access_token":      at,
		"expires_in":        int(s.ttl.Seconds()),
		"token_type":        tokenType,
		"not-before-policy": 0,
		"session_state":     sess.id,
		"scope":             access["scope"],
	}
	if slices.Contains(strings.Fields(sess.scope), "openid") {
		id := map[string]any{
			"typ": "ID", "aud": sess.client, "azp": sess.client, "sub": sess.user.Sub,
			"exp": exp.Unix(), "iat": now.Unix(), "auth_time": sess.authTime.Unix(),
			"at_hash": atHash(at), "sid": sess.id, "acr": "1",
			"email": sess.user.Email, "email_verified": true,
			"preferred_username": sess.user.Username, "name": sess.user.Username,
		}
		if sess.nonce != "" {
			id["nonce"] = sess.nonce
		}
		s.applyHook("ID", id)
		idt, err := s.sign(MintOptions{}, id)
		if err != nil {
			oauthError(w, http.StatusInternalServerError, "server_error", "signing failed")
			return
		}
		resp["id_token"] = idt
	}
	rt, err := s.newRefreshToken(sess, now)
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error", "signing failed")
		return
	}
	resp["refresh_token"] = rt
	resp["refresh_expires_in"] = int(s.opts.RefreshTTL.Seconds())
	jsondoc.Write(w, http.StatusOK, resp, jsondoc.Options{})
}

// newRefreshToken records and returns a refresh token for sess.
func (s *Server) newRefreshToken(sess *session, now time.Time) (string, error) {
	exp := now.Add(s.opts.RefreshTTL)
	id := randomHex(16)
	tok := randomHex(32)
	if !s.opts.OpaqueRefreshTokens {
		claims := jwt.MapClaims{
			"iss": s.Issuer, "aud": s.Issuer, "sub": sess.user.Sub, "typ": "Refresh",
			"azp": sess.client, "sid": sess.id, "session_state": sess.id, "jti": id,
			"iat": now.Unix(), "exp": exp.Unix(), "scope": sess.scope,
		}
		s.applyHook("Refresh", claims)
		maps.DeleteFunc(claims, func(_ string, v any) bool { return v == nil })
		t := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
		t.Header["kid"] = "hmac-" + s.Realm
		signed, err := t.SignedString(s.hmacKey)
		if err != nil {
			return "", fmt.Errorf("idptest: sign refresh token: %w", err)
		}
		tok = signed
	} else {
		id = tok
	}
	s.flow.mu.Lock()
	s.flow.refresh[id] = &refreshEntry{sess: sess, exp: exp}
	s.flow.mu.Unlock()
	return tok, nil
}

// atHash is OIDC's at_hash for RS256/ES256: the left half of SHA-256.
func atHash(accessToken string) string {
	sum := sha256.Sum256([]byte(accessToken))
	return base64.RawURLEncoding.EncodeToString(sum[:len(sum)/2])
}
