package idptest

import (
	"fmt"
	"net/http"

	"github.com/idp-proxy/idp-proxy/internal/jsondoc"
)

// token serves grant_type client_credentials, authorization_code (PKCE
// S256 required), refresh_token and token exchange (exchange.go), with client_secret_basic or
// client_secret_post, as Keycloak does.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	s.tokenRequests.Add(1)
	if s.tokenOutage(w) {
		return
	}
	c, ok := s.clientAuth(w, r)
	if !ok {
		return
	}
	switch gt := r.PostForm.Get("grant_type"); gt {
	case "client_credentials":
		if !c.ServiceAccount {
			oauthError(w, http.StatusUnauthorized, "unauthorized_client", "Client not enabled to retrieve service account")
			return
		}
		claims := s.ServiceClaims(c)
		claims["exp"] = s.now().Add(s.ttl).Unix()
		tokenType, ok := s.bindToProof(w, r, claims)
		if !ok {
			return
		}
		s.applyHook("Bearer", claims)
		tok, err := s.sign(MintOptions{}, claims)
		if err != nil {
			oauthError(w, http.StatusInternalServerError, "server_error", "signing failed")
			return
		}
		jsondoc.Write(w, http.StatusOK, map[string]any{
			"access_token":       tok,
			"expires_in":         int(s.ttl.Seconds()),
			"refresh_expires_in": 0,
			"token_type":         tokenType,
			"not-before-policy":  0,
			"scope":              claims["scope"],
		}, jsondoc.Options{})
	case "authorization_code":
		s.codeGrant(w, r, c)
	case "refresh_token":
		s.refreshGrant(w, r, c)
	case tokenExchangeGrant:
		s.exchangeGrant(w, r, c)
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", fmt.Sprintf("grant type %q is not supported", gt))
	}
}

// clientAuth parses the form and authenticates the client (HTTP Basic or
// form fields); on failure it answers the OAuth error itself.
func (s *Server) clientAuth(w http.ResponseWriter, r *http.Request) (Client, bool) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "malformed form")
		return Client{}, false
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	s.mu.Lock()
	c, known := s.clients[id]
	s.mu.Unlock()
	if !known || c.Secret != secret || secret == "" {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "Invalid client or Invalid client credentials")
		return Client{}, false
	}
	return c, true
}

// TokenRequests counts the requests to the token endpoint, whatever their
// outcome.
func (s *Server) TokenRequests() int { return int(s.tokenRequests.Load()) }

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	jsondoc.Write(w, status, map[string]string{"error": code, "error_description": desc}, jsondoc.Options{})
}
