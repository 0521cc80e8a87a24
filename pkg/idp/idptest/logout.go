package idptest

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// revoke is RFC 7009 revocation for refresh tokens of the calling client:
// 200 whether or not the token was known, as the RFC wants.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	c, ok := s.clientAuth(w, r)
	if !ok {
		return
	}
	tok := r.PostForm.Get("token")
	if tok == "" {
		oauthError(w, http.StatusBadRequest, "invalid_request", "Token not provided")
		return
	}
	if id, err := s.refreshID(tok); err == nil {
		s.flow.mu.Lock()
		if e := s.flow.refresh[id]; e != nil && e.sess.client == c.ID {
			delete(s.flow.refresh, id)
		}
		s.flow.mu.Unlock()
	}
	w.WriteHeader(http.StatusOK)
}

// backchannelLogout is Keycloak's logout for confidential clients: POST
// client credentials and refresh_token; the session and every refresh
// token of it end. 204 on success.
func (s *Server) backchannelLogout(w http.ResponseWriter, r *http.Request) {
	c, ok := s.clientAuth(w, r)
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
	s.flow.mu.Unlock()
	if e == nil || e.sess.client != c.ID {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "Invalid refresh token")
		return
	}
	s.endSession(e.sess.id)
	w.WriteHeader(http.StatusNoContent)
}

// frontchannelLogout is RP-initiated logout in the browser: the session
// named by a valid id_token_hint ends; post_logout_redirect_uri (accepted
// only with such a hint, under the client's redirect-URI rule) receives
// the browser with state, else a short page says the user is logged out.
func (s *Server) frontchannelLogout(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var hint struct {
		jwt.RegisteredClaims
		SID string `json:"sid"`
		AZP string `json:"azp"`
	}
	s.mu.Lock()
	pub := &s.rsaKey.PublicKey
	s.mu.Unlock()
	_, err := jwt.ParseWithClaims(q.Get("id_token_hint"), &hint, func(*jwt.Token) (any, error) { return pub, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer(s.Issuer), jwt.WithoutClaimsValidation())
	if err == nil && hint.SID != "" {
		s.endSession(hint.SID)
	}
	if target := q.Get("post_logout_redirect_uri"); target != "" {
		s.mu.Lock()
		c, known := s.clients[hint.AZP]
		s.mu.Unlock()
		if err != nil || !known || !redirectAllowed(c, target) {
			http.Error(w, "Invalid redirect uri", http.StatusBadRequest)
			return
		}
		if st := q.Get("state"); st != "" {
			sep := "?"
			if strings.Contains(target, "?") {
				sep = "&"
			}
			target += sep + url.Values{"state": {st}}.Encode()
		}
		http.Redirect(w, r, target, http.StatusFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("You are logged out.\n"))
}

// endSession ends the session sid and forgets its refresh tokens.
func (s *Server) endSession(sid string) {
	s.flow.mu.Lock()
	defer s.flow.mu.Unlock()
	delete(s.flow.sessions, sid)
	for id, e := range s.flow.refresh {
		if e.sess.id == sid {
			delete(s.flow.refresh, id)
		}
	}
}

// SessionIDs lists the sid of every active login session.
func (s *Server) SessionIDs() []string {
	s.flow.mu.Lock()
	defer s.flow.mu.Unlock()
	ids := make([]string, 0, len(s.flow.sessions))
	for id := range s.flow.sessions {
		ids = append(ids, id)
	}
	return ids
}

// EndSessions ends every login session, as an administrator signing all
// users out would: their refresh tokens stop working.
func (s *Server) EndSessions() {
	for _, sid := range s.SessionIDs() {
		s.endSession(sid)
	}
}

// LogoutToken mints an OpenID Connect Back-Channel Logout 1.0 logout
// token for client, naming the provider session sid and/or the user sub
// ("" leaves either out), as the provider POSTs it to a client's
// back-channel logout URI (form field logout_token).
func (s *Server) LogoutToken(client, sid, sub string) string {
	claims := map[string]any{
		"iss": s.Issuer, "aud": client, "iat": s.now().Unix(), "exp": s.now().Add(2 * time.Minute).Unix(),
		"jti": randomHex(16), "typ": "Logout",
		"events": map[string]any{"http://schemas.openid.net/event/backchannel-logout": map[string]any{}},
	}
	if sid != "" {
		claims["sid"] = sid
	}
	if sub != "" {
		claims["sub"] = sub
	}
	return s.MintWith(MintOptions{NoDefaults: true, Header: map[string]any{"typ": "logout+jwt"}}, claims)
}
