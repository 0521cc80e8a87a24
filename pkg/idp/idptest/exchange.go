package idptest

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idp-proxy/idp-proxy/internal/jsondoc"
)

// RFC 8693 identifiers.
const (
	tokenExchangeGrant   = "urn:ietf:params:oauth:grant-type:token-exchange"
	accessTokenType      = "urn:ietf:params:oauth:token-type:access_token"
	maxExchangeAudiences = 8
)

// exchangeState is the token endpoint's test controls.
type exchangeState struct {
	mu         sync.Mutex
	refuse     string        // every exchange refused with this error code
	outage     int           // the token endpoint's answer status (5xx); 0 = none
	retryAfter int           // its Retry-After, seconds
	gate       chan struct{} // exchanges wait until it is closed
	edit       func(map[string]any)

	exchanges atomic.Int64
}

// SetExchangeRefusal makes the token endpoint refuse every token
// exchange with code (invalid_request, invalid_client,
// unauthorized_client, access_denied, ...: status 401 for
// invalid_client, else 400, as Keycloak answers), after client
// authentication; "" serves exchanges again.
func (s *Server) SetExchangeRefusal(code string) {
	s.x.mu.Lock()
	s.x.refuse = code
	s.x.mu.Unlock()
}

// SetTokenOutage makes the token endpoint alone (discovery and the JWKS
// keep working) answer status, e.g. 503, with Retry-After retryAfter
// seconds (0: none) to every grant; status 0 ends the outage.
func (s *Server) SetTokenOutage(status, retryAfter int) {
	s.x.mu.Lock()
	s.x.outage, s.x.retryAfter = status, retryAfter
	s.x.mu.Unlock()
}

// HoldExchanges makes token exchanges wait, after they are counted, until
// the returned function is called, for tests of concurrent requests.
func (s *Server) HoldExchanges() (release func()) {
	g := make(chan struct{})
	s.x.mu.Lock()
	s.x.gate = g
	s.x.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.x.mu.Lock()
			s.x.gate = nil
			s.x.mu.Unlock()
			close(g)
		})
	}
}

// SetExchangeResponse edits every successful exchange's response document
// before it is sent (a wrong issued_token_type, token_type, no
// expires_in), for tests of clients; nil sends it as made.
func (s *Server) SetExchangeResponse(edit func(doc map[string]any)) {
	s.x.mu.Lock()
	s.x.edit = edit
	s.x.mu.Unlock()
}

// Exchanges counts the token-exchange requests, whatever their outcome.
func (s *Server) Exchanges() int { return int(s.x.exchanges.Load()) }

// tokenOutage answers the outage set by SetTokenOutage; false without one.
func (s *Server) tokenOutage(w http.ResponseWriter) bool {
	s.x.mu.Lock()
	status, ra := s.x.outage, s.x.retryAfter
	s.x.mu.Unlock()
	if status == 0 {
		return false
	}
	if ra > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ra))
	}
	http.Error(w, "token endpoint unavailable", status)
	return true
}

// exchangeGrant serves Keycloak's standard token exchange (26.2+, RFC
// 8693) as Keycloak does, to the extent a test needs:
//
//   - the client must have StandardTokenExchange (else unauthorized_client);
//   - subject_token is required, subject_token_type must be the access
//     token type, requested_token_type, when sent, the access token type
//     (refresh tokens are not offered) (else invalid_request);
//   - the subject token must be valid: signed by this server, not expired
//     (else invalid_request);
//   - the requesting client must be in the subject token's aud (else
//     access_denied, "Client is not within the token audience");
//   - each audience must be a known client (else invalid_client, "Audience
//     not found");
//
// The token issued has the subject token's user claims, aud the requested
// audiences (the requesting client without one), azp the requesting
// client, the requested scope (else the subject token's), and expires at
// the earlier of the server's TTL and the subject token's exp.
func (s *Server) exchangeGrant(w http.ResponseWriter, r *http.Request, c Client) {
	s.x.exchanges.Add(1)
	s.x.mu.Lock()
	refuse, gate, edit := s.x.refuse, s.x.gate, s.x.edit
	s.x.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	if refuse != "" {
		status := http.StatusBadRequest
		if refuse == "invalid_client" {
			status = http.StatusUnauthorized
		}
		oauthError(w, status, refuse, "refused by the test provider")
		return
	}
	if !c.StandardTokenExchange {
		oauthError(w, http.StatusBadRequest, "unauthorized_client", "Standard token exchange is not enabled for the requested client")
		return
	}
	f := r.PostForm
	subject := f.Get("subject_token")
	switch {
	case subject == "":
		oauthError(w, http.StatusBadRequest, "invalid_request", "Parameter 'subject_token' required")
		return
	case f.Get("subject_token_type") != accessTokenType:
		oauthError(w, http.StatusBadRequest, "invalid_request", "Parameter 'subject_token' supports access tokens only")
		return
	case f.Has("requested_token_type") && f.Get("requested_token_type") != accessTokenType:
		oauthError(w, http.StatusBadRequest, "invalid_request", "requested_token_type unsupported")
		return
	}
	claims, err := s.verifyOwn(subject)
	if err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "Invalid token")
		return
	}
	if !slices.Contains(audiences(claims["aud"]), c.ID) {
		oauthError(w, http.StatusBadRequest, "access_denied", "Client is not within the token audience")
		return
	}
	auds := f["audience"]
	if len(auds) > maxExchangeAudiences {
		oauthError(w, http.StatusBadRequest, "invalid_request", "too many audiences")
		return
	}
	s.mu.Lock()
	for _, a := range auds {
		if _, ok := s.clients[a]; !ok {
			s.mu.Unlock()
			oauthError(w, http.StatusBadRequest, "invalid_client", "Audience not found")
			return
		}
	}
	s.mu.Unlock()
	now := s.now()
	exp := now.Add(s.ttl).Unix()
	if e, ok := claims["exp"].(float64); ok && int64(e) < exp {
		exp = int64(e)
	}
	out := map[string]any{}
	for k, v := range claims {
		out[k] = v
	}
	out["iat"], out["exp"], out["jti"], out["azp"] = now.Unix(), exp, randomHex(16), c.ID
	switch len(auds) {
	case 0:
		out["aud"] = c.ID
	case 1:
		out["aud"] = auds[0]
	default:
		out["aud"] = auds
	}
	if sc := f.Get("scope"); sc != "" {
		out["scope"] = sc
	}
	s.applyHook("Bearer", out)
	tok, err := s.sign(MintOptions{}, out)
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error", "signing failed")
		return
	}
	doc := map[string]any{
		"access_token":      tok,
		"issued_token_type": accessTokenType,
		"token_type":        "Bearer",
		"expires_in":        exp - now.Unix(),
		"scope":             out["scope"],
		"not-before-policy": 0,
	}
	if edit != nil {
		edit(doc)
	}
	jsondoc.Write(w, http.StatusOK, doc, jsondoc.Options{})
}

// verifyOwn checks a token this server signed with its current keys and
// returns its claims.
func (s *Server) verifyOwn(raw string) (map[string]any, error) {
	s.mu.Lock()
	rk, ek := &s.rsaKey.PublicKey, &s.ecKey.PublicKey
	s.mu.Unlock()
	tok, err := jwt.Parse(raw, func(t *jwt.Token) (any, error) {
		switch t.Method.Alg() {
		case "RS256":
			return rk, nil
		case "ES256":
			return ek, nil
		}
		return nil, errors.New("unexpected alg")
	}, jwt.WithValidMethods([]string{"RS256", "ES256"}), jwt.WithExpirationRequired(),
		jwt.WithIssuer(s.Issuer), jwt.WithTimeFunc(s.now))
	if err != nil {
		return nil, fmt.Errorf("idptest: subject token: %w", err)
	}
	return tok.Claims.(jwt.MapClaims), nil
}

// audiences reads an aud claim: a string or an array of strings.
func audiences(v any) []string {
	switch a := v.(type) {
	case string:
		return []string{a}
	case []any:
		out := make([]string, 0, len(a))
		for _, x := range a {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
