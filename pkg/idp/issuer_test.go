package idp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// A provider that is not a Keycloak realm: the issuer is the server's URL
// and every endpoint sits at a path only discovery names.

// pathRecorder is a transport that records the paths the plugin asks for.
type pathRecorder struct {
	mu    sync.Mutex
	paths []string
}

func (r *pathRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.paths = append(r.paths, req.URL.Path)
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

// keycloakPaths returns the recorded paths that are Keycloak's.
func (r *pathRecorder) keycloakPaths() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return keycloakPathsIn(r.paths)
}

func keycloakPathsIn(paths []string) []string {
	var out []string
	for _, p := range paths {
		if strings.Contains(p, "/realms/") || strings.Contains(p, "/protocol/openid-connect") {
			out = append(out, p)
		}
	}
	return out
}

// plainIssuer configures a plugin for srv by its issuer URL alone.
func plainIssuer(srv *idptest.Server, rec *pathRecorder) func(*idp.Config) {
	return func(c *idp.Config) {
		c.ServerURL, c.Realm, c.IssuerURL = "", "", srv.Issuer
		if rec != nil {
			c.HTTPClient = &http.Client{Transport: rec}
		}
	}
}

func TestPlainIssuerBearerAndServiceTokens(t *testing.T) {
	srv := idptest.NewServer(t, idptest.Options{PlainIssuer: true, Clients: []idptest.Client{reporter}})
	if strings.Contains(srv.Issuer, "/realms/") || srv.Issuer != srv.URL {
		t.Fatalf("plain issuer %q", srv.Issuer)
	}
	rec := &pathRecorder{}
	api := newPlugin(t, srv, func(c *idp.Config) {
		plainIssuer(srv, rec)(c)
		c.OptionalAudiences = []string{reporter.ID}
	})
	if api.Issuer() != srv.Issuer {
		t.Fatalf("Issuer = %q, want %q", api.Issuer(), srv.Issuer)
	}
	h := api.Middleware(&okHandler{})

	tok := srv.Mint(srv.UserClaims(clientID, "alice", "creator"))
	if rec := do(t, h, "GET", "/x", "Authorization", "Bearer "+tok); rec.Code != http.StatusOK {
		t.Fatalf("bearer token of the plain issuer: %d %s", rec.Code, rec.Body)
	}
	// The challenge's realm is the issuer: there is no Keycloak realm.
	rec401 := do(t, h, "GET", "/x")
	if got, want := rec401.Header().Get("WWW-Authenticate"), `Bearer realm="`+srv.Issuer+`"`; got != want {
		t.Errorf("WWW-Authenticate = %q, want %q", got, want)
	}

	// client_credentials at the discovered token endpoint, a path that
	// is not Keycloak's.
	svc := newPlugin(t, srv, func(c *idp.Config) {
		plainIssuer(srv, rec)(c)
		c.ClientID, c.ClientSecret = reporter.ID, reporter.Secret
	})
	before := srv.TokenRequests()
	st, err := svc.ClientCredentials(t.Context()).Token()
	if err != nil {
		t.Fatalf("client_credentials: %v", err)
	}
	if srv.TokenRequests() != before+1 {
		t.Fatal("the token endpoint of the discovery document was not called")
	}
	if _, err := api.Verify(verifyCtx(t), st.AccessToken); err != nil {
		t.Fatalf("service token refused: %v", err)
	}
	if kc := rec.keycloakPaths(); len(kc) > 0 {
		t.Errorf("Keycloak paths requested of a plain issuer: %v", kc)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, want := range []string{"/.well-known/openid-configuration", idptest.PlainPrefix + "/keys", idptest.PlainPrefix + "/token"} {
		found := false
		for _, p := range rec.paths {
			found = found || p == want
		}
		if !found {
			t.Errorf("%s not requested; requests: %v", want, rec.paths)
		}
	}
}

// iss must equal the configured issuer byte for byte: no trailing slash,
// case or whitespace folding.
func TestPlainIssuerExactIss(t *testing.T) {
	srv := idptest.NewServer(t, idptest.Options{PlainIssuer: true})
	p := newPlugin(t, srv, plainIssuer(srv, nil))
	u, _ := url.Parse(srv.Issuer)
	for _, iss := range []string{
		srv.Issuer + "/",
		strings.ToUpper(u.Scheme) + "://" + u.Host,
		srv.Issuer + " ",
		" " + srv.Issuer,
		strings.Replace(srv.Issuer, "127.0.0.1", "localhost", 1),
		srv.Issuer + "/realms/" + srv.Realm,
	} {
		claims := srv.UserClaims(clientID, "alice")
		claims["iss"] = iss
		if _, err := p.Verify(verifyCtx(t), srv.Mint(claims)); !errors.Is(err, idp.ErrInvalidToken) {
			t.Errorf("iss %q: %v, want ErrInvalidToken", iss, err)
		}
	}
}

// An issuer configured with a trailing slash: discovery is fetched without
// it (Discovery §4.1), and the document's issuer and the tokens' iss must
// keep it.
func TestIssuerWithTrailingSlash(t *testing.T) {
	var issuer string
	srv := idptest.NewServer(t, idptest.Options{PlainIssuer: true, Discovery: func(doc map[string]any) { doc["issuer"] = issuer }})
	issuer = srv.Issuer + "/"
	rec := &pathRecorder{}
	p := newPlugin(t, srv, func(c *idp.Config) { plainIssuer(srv, rec)(c); c.IssuerURL = issuer })
	rec.mu.Lock()
	if first := rec.paths[0]; first != "/.well-known/openid-configuration" {
		t.Errorf("discovery at %q, want /.well-known/openid-configuration", first)
	}
	rec.mu.Unlock()
	claims := srv.UserClaims(clientID, "alice")
	claims["iss"] = issuer
	if _, err := p.Verify(verifyCtx(t), srv.Mint(claims)); err != nil {
		t.Fatalf("iss with the configured trailing slash: %v", err)
	}
	if _, err := p.Verify(verifyCtx(t), srv.Mint(srv.UserClaims(clientID, "alice"))); !errors.Is(err, idp.ErrInvalidToken) {
		t.Fatalf("iss without the trailing slash: %v, want ErrInvalidToken", err)
	}
}

// notReady starts a plugin for cfg and returns it with the error of its
// first key fetch, checking that it is not ready and answers 503.
func notReady(t *testing.T, cfg idp.Config) error {
	t.Helper()
	p, err := idp.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	ferr := p.Refresh(ctx)
	if ferr == nil || p.Ready() {
		t.Fatalf("provider accepted: Refresh = %v, Ready = %v", ferr, p.Ready())
	}
	rec := do(t, p.Middleware(&okHandler{}), "GET", "/x", "Authorization", "Bearer x.y.z")
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("protected route: %d %q, want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	return ferr
}

func TestIssuerDiscoveryRefused(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(doc map[string]any, issuer string)
		config func(issuer string) string // the configured issuer
		want   string
	}{
		{"another issuer", func(d map[string]any, _ string) { d["issuer"] = "https://evil.example" }, nil, `"https://evil.example"`},
		{"trailing slash added", func(d map[string]any, iss string) { d["issuer"] = iss + "/" }, nil, "byte for byte"},
		{"trailing slash configured", nil, func(iss string) string { return iss + "/" }, "byte for byte"},
		{"other case", func(d map[string]any, iss string) { d["issuer"] = strings.ToUpper(iss) }, nil, "byte for byte"},
		{"no jwks_uri", func(d map[string]any, _ string) { delete(d, "jwks_uri") }, nil, "no jwks_uri"},
		{"endpoint not a URL", func(d map[string]any, _ string) { d["token_endpoint"] = "javascript:x" }, nil, "token_endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var issuer string
			srv := idptest.NewServer(t, idptest.Options{PlainIssuer: true, Discovery: func(doc map[string]any) {
				if tt.edit != nil {
					tt.edit(doc, issuer)
				}
			}})
			issuer = srv.Issuer
			cfg := idp.Config{IssuerURL: srv.Issuer, ClientID: clientID}
			if tt.config != nil {
				cfg.IssuerURL = tt.config(srv.Issuer)
			}
			err := notReady(t, cfg)
			if !errors.Is(err, idp.ErrDiscovery) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Refresh = %v, want ErrDiscovery naming %s", err, tt.want)
			}
		})
	}
}

// toIssuer turns the flow environment's Keycloak configuration into the
// plain issuer's: its ServerURL is the plain issuer.
func toIssuer(c *idp.Config) { c.IssuerURL, c.ServerURL, c.Realm = c.ServerURL, "", "" }

// newPlainFlowEnv is newFlowEnv against a plain issuer whose discovery
// document edit changes (nil: none), the plugin calling it through rt.
func newPlainFlowEnv(t *testing.T, edit func(doc map[string]any), rt http.RoundTripper) *flowEnv {
	t.Helper()
	return newFlowEnv(t, idptest.Options{PlainIssuer: true, Discovery: edit}, func(c *idp.Config) {
		toIssuer(c)
		c.HTTPClient = &http.Client{Transport: rt}
	})
}

// logoutOutcome logs out with refresh and returns provider_logout.
func logoutOutcome(t *testing.T, e *flowEnv, refresh string) string {
	t.Helper()
	r := e.post(t, "/auth/logout", "application/json", `{"refresh_token":"`+refresh+`"}`)
	var out struct {
		ProviderLogout string `json:"provider_logout"`
	}
	if r.StatusCode != http.StatusOK {
		t.Fatalf("logout: %d %s", r.StatusCode, readBody(r))
	}
	if err := json.NewDecoder(r.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.ProviderLogout
}

// The login redirect, the code exchange and the logout use the endpoints
// of the discovery document.
func TestPlainIssuerLoginFlow(t *testing.T) {
	rec := &pathRecorder{}
	e := newPlainFlowEnv(t, nil, rec)
	authURL := e.startLogin(t, "")
	if got := authURL.Scheme + "://" + authURL.Host + authURL.Path; got != e.idp.AuthURL() {
		t.Fatalf("login redirects to %s, want the discovered %s", got, e.idp.AuthURL())
	}
	doc := decodeDoc(t, e.get(t, e.authorize(t, authURL)))
	if _, err := e.p.Verify(verifyCtx(t), doc.AccessToken); err != nil {
		t.Fatalf("access token of the plain issuer: %v", err)
	}
	if got := logoutOutcome(t, e, doc.RefreshToken); got != "done" {
		t.Fatalf("provider_logout = %q, want done", got)
	}
	// Revoked (RFC 7009); the end-session endpoint is for browsers at a
	// provider other than Keycloak, and gets no client secret.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !slices.Contains(rec.paths, idptest.PlainPrefix+"/revoke") || slices.Contains(rec.paths, idptest.PlainPrefix+"/logout") {
		t.Fatalf("logout called %v, want the revocation endpoint and not the end-session endpoint", rec.paths)
	}
	if kc := keycloakPathsIn(rec.paths); len(kc) > 0 {
		t.Errorf("Keycloak paths requested: %v", kc)
	}
}

// Endpoints absent from discovery are unavailable, never guessed: no
// token_endpoint is 503 naming it for the routes and an error naming it
// for client_credentials.
func TestPlainIssuerWithoutTokenEndpoint(t *testing.T) {
	rec := &pathRecorder{}
	e := newPlainFlowEnv(t, func(doc map[string]any) { delete(doc, "token_endpoint") }, rec)
	wantProblem(t, e.get(t, e.base+"/auth/login"), http.StatusServiceUnavailable, "token_endpoint")
	wantProblem(t, e.post(t, "/auth/refresh", "application/json", `{"refresh_token":"abc"}`), http.StatusServiceUnavailable, "token_endpoint")
	_, err := e.p.ClientCredentials(t.Context()).Token()
	if !errors.Is(err, idp.ErrUnavailable) || !strings.Contains(err.Error(), "token_endpoint") {
		t.Fatalf("client_credentials without token_endpoint: %v", err)
	}
	if kc := rec.keycloakPaths(); len(kc) > 0 {
		t.Errorf("Keycloak paths guessed: %v", kc)
	}
}

// Without end-session and revocation endpoints, logout skips the provider.
func TestPlainIssuerWithoutLogoutEndpoints(t *testing.T) {
	rec := &pathRecorder{}
	e := newPlainFlowEnv(t, func(doc map[string]any) {
		delete(doc, "end_session_endpoint")
		delete(doc, "revocation_endpoint")
	}, rec)
	doc := decodeDoc(t, e.get(t, e.authorize(t, e.startLogin(t, ""))))
	if got := logoutOutcome(t, e, doc.RefreshToken); got != "skipped" {
		t.Fatalf("provider_logout = %q, want skipped", got)
	}
	if kc := rec.keycloakPaths(); len(kc) > 0 {
		t.Errorf("Keycloak paths guessed: %v", kc)
	}
}

// basicRecorder records whether token requests carried HTTP Basic
// credentials.
type basicRecorder struct {
	mu    sync.Mutex
	basic []bool
}

func (r *basicRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost {
		_, _, ok := req.BasicAuth()
		r.mu.Lock()
		r.basic = append(r.basic, ok)
		r.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(req)
}

// The client authenticates at the token endpoint as the discovery document
// allows: in the form when it lists client_secret_post (and always for a
// Keycloak realm), else with HTTP Basic, Discovery's default.
func TestTokenEndpointAuthMethod(t *testing.T) {
	tests := []struct {
		name    string
		methods []string // nil: the field absent
		plain   bool
		basic   bool
	}{
		{"post listed", []string{"client_secret_basic", "client_secret_post"}, true, false},
		{"basic only", []string{"client_secret_basic"}, true, true},
		{"absent", nil, true, true},
		{"keycloak realm, basic only listed", []string{"client_secret_basic"}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := idptest.NewServer(t, idptest.Options{PlainIssuer: tt.plain, Clients: []idptest.Client{reporter}, Discovery: func(doc map[string]any) {
				if tt.methods == nil {
					delete(doc, "token_endpoint_auth_methods_supported")
				} else {
					doc["token_endpoint_auth_methods_supported"] = tt.methods
				}
			}})
			rec := &basicRecorder{}
			p := newPlugin(t, srv, func(c *idp.Config) {
				if tt.plain {
					plainIssuer(srv, nil)(c)
				}
				c.ClientID, c.ClientSecret = reporter.ID, reporter.Secret
				c.HTTPClient = &http.Client{Transport: rec}
			})
			if _, err := p.ClientCredentials(t.Context()).Token(); err != nil {
				t.Fatal(err)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.basic) != 1 || rec.basic[0] != tt.basic {
				t.Fatalf("token requests with Basic: %v, want [%v]", rec.basic, tt.basic)
			}
		})
	}
}

// Revocation authenticates as its own metadata allows: HTTP Basic when
// client_secret_post is not listed.
func TestPlainIssuerRevocationAuthMethod(t *testing.T) {
	rec := &basicRecorder{}
	e := newPlainFlowEnv(t, func(doc map[string]any) {
		doc["revocation_endpoint_auth_methods_supported"] = []string{"client_secret_basic"}
	}, rec)
	doc := decodeDoc(t, e.get(t, e.authorize(t, e.startLogin(t, ""))))
	if got := logoutOutcome(t, e, doc.RefreshToken); got != "done" {
		t.Fatalf("provider_logout = %q, want done", got)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	// The code exchange (form: the token endpoint lists client_secret_post),
	// then the revocation (Basic).
	if len(rec.basic) != 2 || rec.basic[0] || !rec.basic[1] {
		t.Fatalf("POSTs with Basic: %v, want [false true]", rec.basic)
	}
}
