package proxy

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/oauth2/clientcredentials"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/memstore"
)

// TestEndToEndShortener runs the real shortener behind the proxy, with the
// test provider: public redirect and health, creation needing a role,
// a service token through an optional audience, the /auth login flow
// served by the proxy, and the owner recorded from the proxy's header.
func TestEndToEndShortener(t *testing.T) {
	shortenerClient := idptest.Client{ID: "shortener", Secret: "shortener-secret"}
	idpSrv := idptest.NewServer(t, idptest.Options{
		Clients: []idptest.Client{shortenerClient, svcReporter, svcOther},
		User:    idptest.User{Username: "alice", RealmRoles: []string{"creator"}},
	})

	store := memstore.New()
	t.Cleanup(func() { _ = store.Close() })
	svc, err := shortener.New(store, shortener.Options{BaseURL: "https://sho.rt"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := shortener.NewHandler(svc, shortener.HandlerOptions{Owner: shortener.OwnerFromHeader(DefaultUserHeader)})
	if err != nil {
		t.Fatal(err)
	}
	var upstreamAuthHits atomic.Int64
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/auth") {
			upstreamAuthHits.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(upstream.Close)

	// The proxy's address must be known for redirect_uri before New.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxyURL := "http://" + ln.Addr().String()
	cfg := testSetup{Config: DefaultConfig()}
	cfg.Upstream.URL = upstream.URL
	cfg.IDP.ServerURL, cfg.IDP.Realm, cfg.IDP.ClientID = idpSrv.URL, idpSrv.Realm, "shortener"
	cfg.IDP.ClientSecret = shortenerClient.Secret
	cfg.IDP.OptionalAudiences = []string{"svc-reporter"}
	cfg.IDP.IncludeRoutes = true
	cfg.IDP.RedirectURI = proxyURL + "/auth/callback"
	cfg.IDP.SessionSecret = []byte(strings.Repeat("s", 32))
	cfg.Routes = []RouteConfig{
		{Match: "GET /health", Public: true},
		{Match: "GET /{code}", Public: true},
		{Match: "POST /shorten", Roles: []string{"creator"}},
	}
	p, err := newProxy(t, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Plugin().WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	px := httptest.NewUnstartedServer(p)
	px.Listener.Close()
	px.Listener = ln
	px.Start()
	t.Cleanup(px.Close)

	if !strings.Contains(p.Table(), "/auth/") {
		t.Errorf("rule table does not show the /auth routes:\n%s", p.Table())
	}

	resp, body := do(t, "GET", proxyURL+"/health", "", nil, "")
	if resp.StatusCode != 200 || !strings.Contains(body, `"healthy"`) {
		t.Fatalf("health: %d %s", resp.StatusCode, body)
	}

	create := func(token string, hdr map[string]string) (int, string) {
		t.Helper()
		if hdr == nil {
			hdr = map[string]string{}
		}
		hdr["Content-Type"] = "application/json"
		resp, body := do(t, "POST", proxyURL+"/shorten", token, hdr, `{"url":"https://example.com/docs?page=2"}`)
		if resp.StatusCode != http.StatusCreated {
			return resp.StatusCode, ""
		}
		var out struct {
			ShortCode string `json:"short_code"`
		}
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, out.ShortCode
	}
	owner := func(code string) string {
		t.Helper()
		l, err := svc.Resolve(t.Context(), code)
		if err != nil {
			t.Fatal(err)
		}
		return l.CreatedBy
	}

	if code, _ := create("", nil); code != http.StatusUnauthorized {
		t.Errorf("create without a token: %d, want 401", code)
	}
	if code, _ := create(idpSrv.Mint(idpSrv.UserClaims("shortener", "bob")), nil); code != http.StatusForbidden {
		t.Errorf("create without the role: %d, want 403", code)
	}
	status, code := create(idpSrv.Mint(idpSrv.UserClaims("shortener", "carol", "creator")),
		map[string]string{"X-Auth-Request-User": "mallory", "X_Auth_Request_User": "mallory"})
	if status != http.StatusCreated {
		t.Fatalf("create with the role: %d, want 201", status)
	}
	if got := owner(code); got != "user-carol" {
		t.Errorf("owner = %q, want the token's sub (spoofed headers ignored)", got)
	}

	// A service calls with a client_credentials token: aud "account",
	// azp "svc-reporter", accepted through optional_audiences.
	cc := clientcredentials.Config{ClientID: svcReporter.ID, ClientSecret: svcReporter.Secret, TokenURL: idpSrv.TokenURL()}
	svcTok, err := cc.Token(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	status, code = create(svcTok.AccessToken, nil)
	if status != http.StatusCreated || owner(code) != "service-svc-reporter" {
		t.Errorf("service token: %d, owner %q", status, owner(code))
	}
	cc.ClientID, cc.ClientSecret = svcOther.ID, svcOther.Secret
	otherTok, err := cc.Token(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := create(otherTok.AccessToken, nil); status != http.StatusUnauthorized {
		t.Errorf("service token of a client that is no audience: %d, want 401", status)
	}

	// Public redirect, no token.
	resp, _ = do(t, "GET", proxyURL+"/"+code, "", nil, "")
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "https://example.com/docs?page=2" {
		t.Errorf("redirect: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := do(t, "GET", proxyURL+"/nope123", "", nil, ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown code: %d", resp.StatusCode)
	}

	// The login flow, served by the proxy: login → provider → callback.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, err = browser.Get(proxyURL + "/auth/login")
	if err != nil {
		t.Fatal(err)
	}
	var tokens struct {
		AccessToken string `json:"access_token"`
	}
	err = json.NewDecoder(resp.Body).Decode(&tokens)
	resp.Body.Close()
	if resp.StatusCode != 200 || err != nil || tokens.AccessToken == "" {
		t.Fatalf("login flow: %d %v", resp.StatusCode, err)
	}
	status, code = create(tokens.AccessToken, nil)
	if status != http.StatusCreated || owner(code) != "user-alice" {
		t.Errorf("token from the login flow: %d, owner %q", status, owner(code))
	}
	if resp, _ := do(t, "GET", proxyURL+"/auth/nope", "", nil, ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/auth/nope: %d, want the routes' own 404", resp.StatusCode)
	}
	if n := upstreamAuthHits.Load(); n != 0 {
		t.Errorf("%d /auth requests reached the upstream", n)
	}
}
