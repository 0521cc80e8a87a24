// Package idptest runs an in-process OpenID Connect provider with
// Keycloak's paths and claim shapes, for tests of code that uses pkg/idp,
// in the manner of net/http/httptest.
//
// It is NOT an identity provider for production: it has no users store, no
// consent, no login form (the authorization endpoint logs one fixed test
// user in), fixed test secrets, and signs whatever Mint is asked to sign.
//
// Beyond discovery, JWKS and client_credentials it serves the
// authorization-code flow with PKCE (S256 required), refresh tokens with
// rotation, RFC 7009 revocation and Keycloak's end-session endpoint; see
// authcode.go. Start runs it outside tests, for demos.
//
//	idpSrv := idptest.NewServer(t)
//	p, _ := idp.New(ctx, idp.Config{ServerURL: idpSrv.URL, Realm: idpSrv.Realm, ClientID: "shortener"})
//	tok := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
//	req.Header.Set("Authorization", "Bearer "+tok)
package idptest

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Client is an OAuth client known to the server's token endpoint.
type Client struct {
	ID          string
	Secret      string              // required: every client is confidential
	RealmRoles  []string            // realm_access.roles of its service-account tokens
	ClientRoles map[string][]string // resource_access of its service-account tokens
	Scope       string              // scope claim; default "profile email"
	// ServiceAccount enables the client's service account (Keycloak's
	// serviceAccountsEnabled): only such a client gets client_credentials
	// tokens; others are refused with unauthorized_client, as Keycloak
	// refuses them. [false, as in Keycloak]
	ServiceAccount bool
	// RedirectURIs are the redirect and post-logout redirect URIs the
	// authorization and end-session endpoints accept for this client,
	// compared exactly. [any http or https URI]
	RedirectURIs []string
}

// User is the fixed test user the authorization endpoint logs in.
type User struct {
	Username    string              // preferred_username ["alice"]
	Sub         string              // sub ["user-" + Username]
	Email       string              // [Username + "@example.com"]
	RealmRoles  []string            // added to offline_access, default-roles-<realm>
	ClientRoles map[string][]string // resource_access, next to account's roles
}

// Options configure Start and NewServer. Zero values get the defaults in
// brackets.
type Options struct {
	Realm   string        // ["demo"]
	Clients []Client      // clients for the token endpoint [none]
	TTL     time.Duration // lifetime of access and ID tokens [5m]

	// Addr is the TCP address to listen on. ["127.0.0.1:0"]
	Addr string
	// PublicURL is the base URL the provider advertises (the issuer is
	// PublicURL + "/realms/" + Realm), for a listener behind a port mapping.
	// ["http://" + the listener's address]
	PublicURL string
	// User is the user the authorization endpoint logs in. [alice]
	User User
	// LoginError makes the authorization endpoint refuse every login with
	// this OAuth error code (e.g. "access_denied"); see SetLoginError. [none]
	LoginError string
	// OpaqueRefreshTokens issues random strings as refresh tokens instead of
	// Keycloak-style JWTs (HS256, typ "Refresh"). [false]
	OpaqueRefreshTokens bool
	// RefreshTTL is the lifetime of refresh tokens. [30m]
	RefreshTTL time.Duration
	// CodeTTL is the lifetime of authorization codes. [1m]
	CodeTTL time.Duration
}

// Server is a running test provider. Its fields are read-only.
type Server struct {
	URL    string // the provider's base URL: idp.Config.ServerURL
	Realm  string // idp.Config.Realm
	Issuer string // URL + "/realms/" + Realm

	t         testing.TB // nil when started by Start
	srv       *http.Server
	ln        net.Listener
	closeOnce sync.Once
	ttl       time.Duration
	opts      Options
	hmacKey   []byte // signs JWT refresh tokens, as Keycloak's realm HMAC key

	flow flowState // authorization codes, sessions, refresh tokens

	mu      sync.Mutex
	rsaKey  *rsa.PrivateKey
	rsaKID  string
	ecKey   *ecdsa.PrivateKey
	ecKID   string
	encKey  *rsa.PrivateKey // published with use "enc", as Keycloak does
	extra   []map[string]any
	clients map[string]Client
	down    bool
	mux     *http.ServeMux

	jwksFetches   atomic.Int64
	tokenRequests atomic.Int64
}

// NewServer starts a provider on 127.0.0.1 (or Options.Addr) and stops it
// at the end of the test. It calls t.Fatal when it cannot start; misuse of
// its methods later is t.Fatal too.
func NewServer(t testing.TB, opts ...Options) *Server {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	s, err := start(o, t)
	if err != nil {
		t.Fatalf("idptest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Start runs a provider outside tests (for demos and examples) until
// Close. Misuse of its methods panics. It is NOT for production: see the
// package documentation.
func Start(opts Options) (*Server, error) { return start(opts, nil) }

func start(o Options, t testing.TB) (*Server, error) {
	if o.Realm == "" {
		o.Realm = "demo"
	}
	if o.TTL == 0 {
		o.TTL = 5 * time.Minute
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.RefreshTTL == 0 {
		o.RefreshTTL = 30 * time.Minute
	}
	if o.CodeTTL == 0 {
		o.CodeTTL = time.Minute
	}
	o.User = o.User.withDefaults()
	s := &Server{t: t, Realm: o.Realm, ttl: o.TTL, opts: o, clients: make(map[string]Client)}
	for _, c := range o.Clients {
		s.clients[c.ID] = c
	}
	s.flow.init(o)
	s.hmacKey = make([]byte, 32)
	_, _ = rand.Read(s.hmacKey)
	if err := s.rotateLocked(); err != nil {
		return nil, err
	}
	enc, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("idptest: %w", err)
	}
	s.encKey = enc
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("idptest: listen: %w", err)
	}
	s.ln = ln
	s.URL = o.PublicURL
	if s.URL == "" {
		s.URL = "http://" + ln.Addr().String()
	}
	s.Issuer = s.URL + "/realms/" + s.Realm
	s.mux = http.NewServeMux()
	base := "/realms/" + s.Realm
	s.mux.HandleFunc("GET "+base+"/.well-known/openid-configuration", s.discovery)
	s.mux.HandleFunc("GET "+base+"/protocol/openid-connect/certs", s.jwks)
	s.mux.HandleFunc("POST "+base+"/protocol/openid-connect/token", s.token)
	s.routeFlow(base + "/protocol/openid-connect")
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// fail reports misuse: t.Fatalf under NewServer, a panic under Start.
func (s *Server) fail(format string, args ...any) {
	if s.t != nil {
		s.t.Helper()
		s.t.Fatalf(format, args...)
		return
	}
	panic(fmt.Sprintf(format, args...))
}

// Handler returns the provider's HTTP handler, for clients that call it
// in memory (a transport serving requests with it, as tests under
// testing/synctest need: real network I/O would stall their fake time).
func (s *Server) Handler() http.Handler { return s.srv.Handler }

// Handle adds a handler to the provider's mux (pattern as http.ServeMux),
// for tests that need more endpoints.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Close stops the server and closes its connections (done automatically
// at the end of the test under NewServer). It may be called more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := s.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			_ = s.srv.Close()
		}
		_ = s.srv.Close()
	})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	down := s.down
	s.mu.Unlock()
	if down {
		http.Error(w, "provider down", http.StatusServiceUnavailable)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// SetDown makes every endpoint answer 503 (true) or work again (false),
// to simulate an outage on the same address.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// JWKSFetches counts the requests to the JWKS endpoint.
func (s *Server) JWKSFetches() int { return int(s.jwksFetches.Load()) }

// TokenURL is Keycloak's token endpoint of the realm.
func (s *Server) TokenURL() string { return s.Issuer + "/protocol/openid-connect/token" }

// KID returns the key IDs of the current RS256 and ES256 signing keys.
func (s *Server) KID() (rs256, es256 string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rsaKID, s.ecKID
}

// RSAPublicKey returns the current RS256 public key.
func (s *Server) RSAPublicKey() *rsa.PublicKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &s.rsaKey.PublicKey
}

// RotateKey replaces both signing keys with new ones under new kids. The
// old keys disappear from the JWKS, as after a rotation whose grace period
// has ended.
func (s *Server) RotateKey() {
	s.mu.Lock()
	err := s.rotateLocked()
	s.mu.Unlock()
	if err != nil {
		s.fail("%v", err)
	}
}

// PublishJWK adds a raw JWK to the JWKS document as is (for tests of
// malformed or unusual keys).
func (s *Server) PublishJWK(jwk map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.extra = append(s.extra, jwk)
}

func (s *Server) rotateLocked() error {
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("idptest: %w", err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("idptest: %w", err)
	}
	s.rsaKey, s.rsaKID = rk, randomHex(8)
	s.ecKey, s.ecKID = ek, randomHex(8)
	return nil
}

// MintOptions select how MintWith signs.
type MintOptions struct {
	// Alg is "RS256" (default) or "ES256", with the server's current key.
	Alg string
	// KID overrides the kid header; "-" omits it.
	KID string
	// Header adds or overrides header fields; a nil value removes one.
	Header map[string]any
	// Key signs with this key instead of the server's (with Alg's method).
	Key crypto.Signer
	// NoDefaults leaves out the claims Mint adds by default.
	NoDefaults bool
}

// Mint signs claims as an access token of the realm with the current RS256
// key. Absent claims get Keycloak's defaults: iss, iat (now), exp (now+5m),
// jti, typ "Bearer", sub. A claim whose value is nil is left out.
func (s *Server) Mint(claims map[string]any) string {
	return s.MintWith(MintOptions{}, claims)
}

// MintWith is Mint with signing options.
func (s *Server) MintWith(o MintOptions, claims map[string]any) string {
	if s.t != nil {
		s.t.Helper()
	}
	tok, err := s.sign(o, claims)
	if err != nil {
		s.fail("%v", err)
	}
	return tok
}

// sign is MintWith returning its error, for use in handlers.
func (s *Server) sign(o MintOptions, claims map[string]any) (string, error) {
	mc := jwt.MapClaims{}
	if !o.NoDefaults {
		now := time.Now()
		mc["iss"] = s.Issuer
		mc["iat"] = now.Unix()
		mc["exp"] = now.Add(5 * time.Minute).Unix()
		mc["jti"] = randomHex(16)
		mc["typ"] = "Bearer"
		mc["sub"] = "f7a3c1d2-0000-4000-8000-" + randomHex(6)
	}
	for k, v := range claims {
		if v == nil {
			delete(mc, k)
		} else {
			mc[k] = v
		}
	}
	s.mu.Lock()
	var method jwt.SigningMethod = jwt.SigningMethodRS256
	var key crypto.Signer = s.rsaKey
	kid := s.rsaKID
	if o.Alg == "ES256" {
		method, key, kid = jwt.SigningMethodES256, s.ecKey, s.ecKID
	} else if o.Alg != "" && o.Alg != "RS256" {
		s.mu.Unlock()
		return "", fmt.Errorf("idptest: MintWith: unsupported Alg %q", o.Alg)
	}
	s.mu.Unlock()
	if o.Key != nil {
		key = o.Key
	}
	tok := jwt.NewWithClaims(method, mc)
	tok.Header["kid"] = kid
	switch o.KID {
	case "":
	case "-":
		delete(tok.Header, "kid")
	default:
		tok.Header["kid"] = o.KID
	}
	for k, v := range o.Header {
		if v == nil {
			delete(tok.Header, k)
		} else {
			tok.Header[k] = v
		}
	}
	signed, err := tok.SignedString(key)
	if err != nil {
		return "", fmt.Errorf("idptest: sign: %w", err)
	}
	return signed, nil
}

// UserClaims returns the claims of a Keycloak user access token obtained by
// client for username, with the given realm roles; add or change claims
// before Mint.
func (s *Server) UserClaims(client, username string, realmRoles ...string) map[string]any {
	roles := make([]any, 0, len(realmRoles)+2)
	roles = append(roles, "offline_access", "default-roles-"+s.Realm)
	for _, r := range realmRoles {
		roles = append(roles, r)
	}
	return map[string]any{
		"aud":                "account",
		"azp":                client,
		"sub":                "user-" + username,
		"sid":                randomHex(8),
		"session_state":      randomHex(8),
		"acr":                "1",
		"realm_access":       map[string]any{"roles": roles},
		"resource_access":    map[string]any{"account": map[string]any{"roles": []any{"manage-account", "view-profile"}}},
		"scope":              "openid email profile",
		"email_verified":     true,
		"preferred_username": username,
		"email":              username + "@example.com",
		"name":               username,
	}
}

// ServiceClaims returns the claims of a Keycloak client_credentials token
// of client c.
func (s *Server) ServiceClaims(c Client) map[string]any {
	roles := make([]any, 0, len(c.RealmRoles))
	for _, r := range c.RealmRoles {
		roles = append(roles, r)
	}
	ra := map[string]any{}
	for client, rs := range c.ClientRoles {
		l := make([]any, len(rs))
		for i, r := range rs {
			l[i] = r
		}
		ra[client] = map[string]any{"roles": l}
	}
	scope := c.Scope
	if scope == "" {
		scope = "profile email"
	}
	return map[string]any{
		"aud":                "account",
		"azp":                c.ID,
		"sub":                "service-" + c.ID,
		"realm_access":       map[string]any{"roles": roles},
		"resource_access":    ra,
		"scope":              scope,
		"preferred_username": "service-account-" + c.ID,
		"clientId":           c.ID,
		"clientHost":         "127.0.0.1",
		"clientAddress":      "127.0.0.1",
		"email_verified":     false,
	}
}

func (s *Server) discovery(w http.ResponseWriter, r *http.Request) {
	p := s.Issuer + "/protocol/openid-connect"
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                     s.Issuer,
		"authorization_endpoint":                     p + "/auth",
		"token_endpoint":                             p + "/token",
		"jwks_uri":                                   p + "/certs",
		"userinfo_endpoint":                          p + "/userinfo",
		"end_session_endpoint":                       p + "/logout",
		"revocation_endpoint":                        p + "/revoke",
		"introspection_endpoint":                     p + "/token/introspect",
		"grant_types_supported":                      []string{"authorization_code", "refresh_token", "client_credentials"},
		"scopes_supported":                           []string{"openid", "profile", "email", "offline_access"},
		"subject_types_supported":                    []string{"public"},
		"token_endpoint_auth_methods_supported":      []string{"client_secret_basic", "client_secret_post"},
		"revocation_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
		"claims_supported":                           []string{"sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "at_hash", "azp", "sid", "email", "preferred_username", "name"},
		"response_types_supported":                   []string{"code"},
		"id_token_signing_alg_values_supported":      []string{"RS256", "ES256"},
		"code_challenge_methods_supported":           []string{"S256"},
	})
}

func (s *Server) jwks(w http.ResponseWriter, r *http.Request) {
	s.jwksFetches.Add(1)
	s.mu.Lock()
	keys := []map[string]any{
		rsaJWK(&s.rsaKey.PublicKey, s.rsaKID, "sig", "RS256"),
		ecJWK(&s.ecKey.PublicKey, s.ecKID),
		rsaJWK(&s.encKey.PublicKey, "enc-"+s.rsaKID, "enc", "RSA-OAEP"),
	}
	keys = append(keys, s.extra...)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"keys": keys})
}

// token serves grant_type client_credentials, authorization_code (PKCE
// S256 required) and refresh_token, with client_secret_basic or
// client_secret_post, as Keycloak does.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	s.tokenRequests.Add(1)
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
		claims["exp"] = time.Now().Add(s.ttl).Unix()
		s.applyHook("Bearer", claims)
		tok, err := s.sign(MintOptions{}, claims)
		if err != nil {
			oauthError(w, http.StatusInternalServerError, "server_error", "signing failed")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"access_token":       tok,
			"expires_in":         int(s.ttl.Seconds()),
			"refresh_expires_in": 0,
			"token_type":         "Bearer",
			"not-before-policy":  0,
			"scope":              claims["scope"],
		})
	case "authorization_code":
		s.codeGrant(w, r, c)
	case "refresh_token":
		s.refreshGrant(w, r, c)
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
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func rsaJWK(k *rsa.PublicKey, kid, use, alg string) map[string]any {
	return map[string]any{
		"kid": kid, "kty": "RSA", "alg": alg, "use": use,
		"n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes()),
	}
}

func ecJWK(k *ecdsa.PublicKey, kid string) map[string]any {
	b, err := k.Bytes() // uncompressed point: 0x04 || X || Y
	if err != nil {
		panic("idptest: " + err.Error())
	}
	n := (len(b) - 1) / 2
	return map[string]any{
		"kid": kid, "kty": "EC", "alg": "ES256", "use": "sig", "crv": "P-256",
		"x": b64(b[1 : 1+n]), "y": b64(b[1+n:]),
	}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
