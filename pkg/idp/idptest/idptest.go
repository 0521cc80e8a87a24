// Package idptest runs an in-process OpenID Connect provider with
// Keycloak's paths and claim shapes (or, with Options.PlainIssuer, as an
// issuer that is not a Keycloak realm), for tests of code that uses pkg/idp,
// in the manner of net/http/httptest.
//
// It is NOT an identity provider for production: it has no users store, no
// consent, no login form (the authorization endpoint logs one fixed test
// user in), fixed test secrets, and signs whatever Mint is asked to sign.
//
// Beyond discovery, JWKS and client_credentials it serves the
// authorization-code flow with PKCE (S256 required), refresh tokens with
// rotation, RFC 7009 revocation, Keycloak's end-session endpoint and
// Keycloak's standard token exchange (RFC 8693; Client.StandardTokenExchange,
// SetExchangeRefusal, SetTokenOutage); see authcode.go, logout.go and
// exchange.go. Start runs it outside tests, for demos.
//
//	idpSrv := idptest.NewServer(t)
//	p, _ := idp.New(ctx, idp.Config{ServerURL: idpSrv.URL, Realm: idpSrv.Realm, ClientID: "shortener"})
//	if err := p.WaitReady(ctx); err != nil { // the keys are loaded (optional: see below)
//		t.Fatal(err)
//	}
//	tok := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
//	req.Header.Set("Authorization", "Bearer "+tok)
//
// idp.New fetches the provider's keys in the background; a request that
// arrives before they are loaded waits for them (idp.Config.FirstKeysWait,
// 5 s), so the first request of a test is served without WaitReady.
// WaitReady makes the wait explicit, and is what a test of a provider
// that is down (Server.SetDown) needs to wait for recovery.
package idptest

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/jsondoc"
	"github.com/idp-proxy/idp-proxy/pkg/idp/dpop"
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
	// StandardTokenExchange enables Keycloak's standard token exchange
	// (RFC 8693) for the client: it may exchange tokens whose aud names
	// it (see Server.SetExchangeRefusal and exchange.go). [false, as in
	// Keycloak]
	StandardTokenExchange bool
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

	// PlainIssuer serves a provider that is not a Keycloak realm: the
	// issuer is the server's URL itself (no "/realms/" path; configure
	// pkg/idp with Config.IssuerURL = Server.Issuer), and the endpoints
	// sit at other paths than Keycloak's, under PlainPrefix, so that only
	// discovery can find them. Realm only names roles in minted tokens.
	// [false: Keycloak's paths]
	PlainIssuer bool
	// Discovery edits the discovery document before it is served, for
	// tests of providers that omit or misstate fields (delete
	// "token_endpoint", set "issuer" to another one). [none]
	Discovery func(doc map[string]any)
	// Now is the provider's clock: the times of the tokens and codes it
	// issues and checks. Give it and idp.Config.Now one test clock to
	// move time forward (token expiry, refresh) without sleeping.
	// [time.Now]
	Now func() time.Time
}

// PlainPrefix is the path of the endpoints of a server with
// Options.PlainIssuer: {URL}/oauth2/v1/authorize, /token, /keys, /revoke,
// /logout.
const PlainPrefix = "/oauth2/v1"

// Server is a running test provider. Its fields are read-only.
type Server struct {
	URL    string // the provider's base URL: idp.Config.ServerURL
	Realm  string // idp.Config.Realm
	Issuer string // URL + "/realms/" + Realm; URL with Options.PlainIssuer

	endpoints string // the base of the endpoint paths, as a URL

	t         testing.TB // nil when started by Start
	srv       *http.Server
	ln        net.Listener
	closeOnce sync.Once
	ttl       time.Duration
	opts      Options
	hmacKey   []byte // signs JWT refresh tokens, as Keycloak's realm HMAC key

	flow flowState      // authorization codes, sessions, refresh tokens
	dpop *dpop.Verifier // the token endpoint's DPoP proofs (bound.go)

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
	discoFetches  atomic.Int64
	tokenRequests atomic.Int64

	x exchangeState // the token-exchange grant's test controls
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
	if o.Now == nil {
		o.Now = time.Now
	}
	o.User = o.User.withDefaults()
	s := &Server{t: t, Realm: o.Realm, ttl: o.TTL, opts: o, clients: make(map[string]Client)}
	for _, c := range o.Clients {
		s.clients[c.ID] = c
	}
	s.flow.init(o)
	dv, err := dpop.NewVerifier(dpop.Options{Now: o.Now})
	if err != nil {
		return nil, fmt.Errorf("idptest: %w", err)
	}
	s.dpop = dv
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
	s.mux = http.NewServeMux()
	base, ep, keys := "/realms/"+s.Realm, "/realms/"+s.Realm+"/protocol/openid-connect", "/certs"
	if o.PlainIssuer {
		base, ep, keys = "", PlainPrefix, "/keys"
	}
	s.Issuer = s.URL + base
	s.endpoints = s.URL + ep
	s.mux.HandleFunc("GET "+base+"/.well-known/openid-configuration", s.discovery)
	s.mux.HandleFunc("GET "+ep+keys, s.jwks)
	s.mux.HandleFunc("POST "+ep+"/token", s.token)
	s.routeFlow(ep)
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

// DiscoveryFetches counts the requests to the discovery document.
func (s *Server) DiscoveryFetches() int { return int(s.discoFetches.Load()) }

// TokenURL is the token endpoint: Keycloak's of the realm, or
// {URL}/oauth2/v1/token with Options.PlainIssuer.
func (s *Server) TokenURL() string { return s.endpoints + "/token" }

// AuthURL is the authorization endpoint: Keycloak's of the realm, or
// {URL}/oauth2/v1/authorize with Options.PlainIssuer.
func (s *Server) AuthURL() string { return s.endpoints + s.authPath() }

func (s *Server) authPath() string {
	if s.opts.PlainIssuer {
		return "/authorize"
	}
	return "/auth"
}

func (s *Server) discovery(w http.ResponseWriter, r *http.Request) {
	s.discoFetches.Add(1)
	p := s.endpoints
	keys := p + "/certs"
	if s.opts.PlainIssuer {
		keys = p + "/keys"
	}
	doc := map[string]any{
		"issuer":                                     s.Issuer,
		"authorization_endpoint":                     s.AuthURL(),
		"token_endpoint":                             p + "/token",
		"jwks_uri":                                   keys,
		"userinfo_endpoint":                          p + "/userinfo",
		"end_session_endpoint":                       p + "/logout",
		"revocation_endpoint":                        p + "/revoke",
		"introspection_endpoint":                     p + "/token/introspect",
		"grant_types_supported":                      []string{"authorization_code", "refresh_token", "client_credentials", tokenExchangeGrant},
		"scopes_supported":                           []string{"openid", "profile", "email", "offline_access"},
		"subject_types_supported":                    []string{"public"},
		"token_endpoint_auth_methods_supported":      []string{"client_secret_basic", "client_secret_post"},
		"revocation_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
		"claims_supported":                           []string{"sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "at_hash", "azp", "sid", "email", "preferred_username", "name"},
		"response_types_supported":                   []string{"code"},
		"id_token_signing_alg_values_supported":      []string{"RS256", "ES256"},
		"code_challenge_methods_supported":           []string{"S256"},
	}
	if s.opts.Discovery != nil {
		s.opts.Discovery(doc)
	}
	jsondoc.Write(w, http.StatusOK, doc, jsondoc.Options{})
}

// now is the provider's clock (Options.Now).
func (s *Server) now() time.Time { return s.opts.Now() }
