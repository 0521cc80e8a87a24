package proxy

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// The proxy's client at the provider may exchange tokens and has a
// service account; orders-api is the exchange's target.
var (
	proxyClient  = idptest.Client{ID: "shortener", Secret: "shortener-secret", StandardTokenExchange: true, ServiceAccount: true, RealmRoles: []string{"svc"}}
	ordersClient = idptest.Client{ID: "orders-api", Secret: "orders-secret"}
)

func exchangeProvider(t testing.TB) *idptest.Server {
	return idptest.NewServer(t, idptest.Options{Clients: []idptest.Client{proxyClient, ordersClient, svcReporter}})
}

// userToken is a user's token whose aud names the proxy's client, as
// Keycloak's standard token exchange requires of the subject token.
func userToken(srv *idptest.Server, user string, sid string) string {
	c := srv.UserClaims("shortener", user, "creator")
	c["aud"] = []any{"shortener", "account"}
	if sid != "" {
		c["sid"] = sid
	}
	return srv.Mint(c)
}

// claimsOf decodes a token's payload without verifying it.
func claimsOf(t *testing.T, raw string) jwt.MapClaims {
	t.Helper()
	c := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(raw, c); err != nil {
		t.Fatalf("the upstream's token %q: %v", raw, err)
	}
	return c
}

func exchangeSetup(srv *idptest.Server, up string) testSetup {
	s := testConfig(srv, "")
	s.IDP.ClientSecret = proxyClient.Secret
	s.Upstreams = []UpstreamRoute{
		{Match: "orders.test/", UpstreamConfig: UpstreamConfig{URL: up, Credential: CredentialExchange, Audience: "orders-api", Scopes: []string{"openid", "orders"}}},
		{Match: "robot.test/", UpstreamConfig: UpstreamConfig{URL: up, Credential: CredentialClientCredentials, Audience: "orders-api", Scopes: []string{"orders"}}},
	}
	return s
}

// TestExchangeUpstreamGetsExchangedToken: the upstream gets the token the
// provider issued for its audience and scopes, for the caller's subject,
// never the caller's own.
func TestExchangeUpstreamGetsExchangedToken(t *testing.T) {
	srv := exchangeProvider(t)
	up := newUpstream(t)
	_, base := assertionProxy(t, exchangeSetup(srv, up.URL))
	alice := userToken(srv, "alice", "")
	resp, _ := hostGet(t, base, "orders.test", "/api/v1/items/1", alice, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	got := up.last(t)
	bearer, ok := strings.CutPrefix(got.Header.Get("Authorization"), "Bearer ")
	if !ok || bearer == alice || len(leaks(got, alice)) > 0 {
		t.Fatalf("Authorization %q, leaks %v", got.Header.Get("Authorization"), leaks(got, alice))
	}
	c := claimsOf(t, bearer)
	if c["aud"] != "orders-api" || c["sub"] != "user-alice" || c["azp"] != "shortener" || c["scope"] != "openid orders" {
		t.Errorf("exchanged token's claims %v", c)
	}
	if got.Header.Get("X-Auth-Request-User") != "user-alice" {
		t.Errorf("identity headers: %v", got.Header)
	}
}

// TestExchangeConcurrentOneExchange: 200 concurrent requests of one
// subject make one exchange at the provider; then the cache answers.
func TestExchangeConcurrentOneExchange(t *testing.T) {
	srv := exchangeProvider(t)
	up := newUpstream(t)
	p, base := assertionProxy(t, exchangeSetup(srv, up.URL))
	const n = 200
	var waiting sync.WaitGroup
	waiting.Add(n)
	src := p.ups.all[0].headers.cred.tokens.(*exchangeSource)
	src.waiting = waiting.Done
	release := srv.HoldExchanges()
	alice := userToken(srv, "alice", "")
	statuses := make(chan int, n)
	for range n {
		go func() {
			req, _ := http.NewRequest("GET", base+"/api/v1/items/1", nil)
			req.Host = "orders.test"
			req.Header.Set("Authorization", "Bearer "+alice)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				statuses <- 0
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	waiting.Wait()
	src.waiting = nil
	release()
	for range n {
		if s := <-statuses; s != 200 {
			t.Fatalf("status %d", s)
		}
	}
	if got := srv.Exchanges(); got != 1 {
		t.Fatalf("%d exchanges for %d concurrent requests of one token, want 1", got, n)
	}
	for range 3 {
		hostGet(t, base, "orders.test", "/api/v1/items/1", alice, nil)
	}
	if got := srv.Exchanges(); got != 1 {
		t.Errorf("%d exchanges after repeated requests, want 1 (cached)", got)
	}
}

// TestExchangeBackchannelLogout: a back-channel logout of a provider
// session empties the exchange cache of that session's tokens, and of no
// other.
func TestExchangeBackchannelLogout(t *testing.T) {
	srv := exchangeProvider(t)
	up := newUpstream(t)
	var px *Proxy
	px, base := sessionProxy(t, srv, up.URL, func(s *testSetup) {
		s.Upstream.Credential = CredentialExchange
		s.Upstream.Audience = "orders-api"
		s.IDP.SessionEnded = func(sid, sub string) { px.SessionEnded(sid, sub) }
	})
	a, b := userToken(srv, "alice", "sid-a"), userToken(srv, "bob", "sid-b")
	get := func(tok string) {
		t.Helper()
		if resp, _ := do(t, "GET", base+"/app/x", tok, nil, ""); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	get(a)
	get(b)
	get(a)
	if srv.Exchanges() != 2 {
		t.Fatalf("%d exchanges, want 2", srv.Exchanges())
	}
	form := url.Values{"logout_token": {srv.LogoutToken("shortener", "sid-a", "")}}
	resp, err := http.Post(base+"/auth/backchannel-logout", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("back-channel logout: %v %v", err, resp.Status)
	}
	get(b)
	if srv.Exchanges() != 2 {
		t.Errorf("another session's token was dropped: %d exchanges", srv.Exchanges())
	}
	get(a)
	if srv.Exchanges() != 3 {
		t.Errorf("the logged-out session's exchanged token is still cached: %d exchanges, want 3", srv.Exchanges())
	}
}

// problemOf reads a problem+json answer.
func problemOf(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Fatalf("Content-Type %q", ct)
	}
	var doc map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestExchangeRefusedIs403: the provider's refusal is a 403
// problem+json naming the upstream and the provider's error code; the
// upstream gets nothing.
func TestExchangeRefusedIs403(t *testing.T) {
	srv := exchangeProvider(t)
	up := newUpstream(t)
	_, base := assertionProxy(t, exchangeSetup(srv, up.URL))
	for _, code := range []string{"access_denied", "invalid_client", "unauthorized_client", "invalid_request"} {
		srv.SetExchangeRefusal(code)
		resp := rawGet(t, base, "orders.test", userToken(srv, "alice", ""))
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%s: status %d", code, resp.StatusCode)
		}
		d, _ := problemOf(t, resp)["detail"].(string)
		if !strings.Contains(d, "orders.test") || !strings.Contains(d, code) {
			t.Errorf("detail %q names not the upstream and %s", d, code)
		}
	}
	// Keycloak's own rule: the proxy is not in the subject token's aud.
	srv.SetExchangeRefusal("")
	c := srv.UserClaims("shortener", "bob", "creator")
	resp := rawGet(t, base, "orders.test", srv.Mint(c))
	if d, _ := problemOf(t, resp)["detail"].(string); resp.StatusCode != 403 || !strings.Contains(d, "access_denied") {
		t.Errorf("not in aud: %d %q", resp.StatusCode, d)
	}
	up.mu.Lock()
	n := len(up.reqs)
	up.mu.Unlock()
	if n != 0 {
		t.Errorf("the upstream got %d requests", n)
	}
}

func rawGet(t *testing.T, base, host, tok string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/v1/items/1", nil)
	req.Host = host
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestUpstreamTokenOutageIs503: a token endpoint that fails gives 503
// with Retry-After, naming the provider, in both modes.
func TestUpstreamTokenOutageIs503(t *testing.T) {
	srv := exchangeProvider(t)
	up := newUpstream(t)
	_, base := assertionProxy(t, exchangeSetup(srv, up.URL))
	srv.SetTokenOutage(http.StatusServiceUnavailable, 9)
	for _, host := range []string{"orders.test", "robot.test"} {
		resp := rawGet(t, base, host, userToken(srv, "alice", ""))
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "9" {
			t.Fatalf("%s: status %d, Retry-After %q", host, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if d, _ := problemOf(t, resp)["detail"].(string); !strings.Contains(d, srv.Issuer) || !strings.Contains(d, host) {
			t.Errorf("detail %q names not the provider and the upstream", d)
		}
	}
	srv.SetTokenOutage(0, 0)
	if resp := rawGet(t, base, "orders.test", userToken(srv, "alice", "")); resp.StatusCode != 200 {
		t.Errorf("after the outage: %d", resp.StatusCode)
	}
}

// TestClientCredentialsUpstream: the upstream gets the proxy's own token
// (fetched once for many callers) and the caller's identity in the
// assertion and headers, never the caller's token.
func TestClientCredentialsUpstream(t *testing.T) {
	srv := exchangeProvider(t)
	up := newUpstream(t)
	p, base := assertionProxy(t, exchangeSetup(srv, up.URL))
	before := srv.TokenRequests()
	var first string
	for _, user := range []string{"alice", "bob", "carol"} {
		tok := userToken(srv, user, "")
		if resp := rawGet(t, base, "robot.test", tok); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		got := up.last(t)
		if len(leaks(got, tok)) > 0 {
			t.Fatalf("the caller's token in %v", leaks(got, tok))
		}
		bearer := strings.TrimPrefix(got.Header.Get("Authorization"), "Bearer ")
		if first == "" {
			first = bearer
		}
		if bearer != first || claimsOf(t, bearer)["azp"] != "shortener" || claimsOf(t, bearer)["sub"] != "service-shortener" {
			t.Fatalf("Authorization %q is not the proxy's one token", bearer)
		}
		a := got.Header.Get(DefaultAssertionHeader)
		id, err := assertionVerifier(t, base+"/.idp-proxy", "orders-api").VerifyIdentity(t.Context(), a)
		if err != nil || id.User.Sub != "user-"+user {
			t.Fatalf("assertion: %v", err)
		}
	}
	if n := srv.TokenRequests() - before; n != 1 {
		t.Errorf("%d token requests for 3 callers, want 1", n)
	}
	if cc := p.ups.all[1].headers.cred.tokens.(*ccSource).cc; cc.Fetches() != 1 {
		t.Errorf("%d fetches", cc.Fetches())
	}
}

func TestExchangeConfigErrors(t *testing.T) {
	srv := newProvider(t)
	for _, c := range []struct {
		name string
		edit func(*testSetup)
		key  string
		want string
	}{
		{"exchange without secret", func(s *testSetup) { s.Upstream.Credential = CredentialExchange }, "IDP.ClientSecret", "needs IDP.ClientSecret"},
		{"client_credentials without secret", func(s *testSetup) {
			s.Upstream.URL = ""
			s.Upstreams = []UpstreamRoute{{Match: "a.test/", UpstreamConfig: UpstreamConfig{URL: "http://127.0.0.1:1", Credential: CredentialClientCredentials}}}
		}, "Upstreams[0].Credential", "needs IDP.ClientSecret"},
		{"scopes without a token mode", func(s *testSetup) { s.Upstream.Scopes = []string{"a"} }, "Upstream.Scopes", "exchange and client_credentials"},
		{"bad scope", func(s *testSetup) {
			s.IDP.ClientSecret = "x"
			s.Upstream.Credential, s.Upstream.Scopes = CredentialExchange, []string{"a b"}
		}, "Upstream.Scopes", "not a scope"},
		{"assertion in Authorization", func(s *testSetup) {
			s.IDP.ClientSecret = "x"
			s.Upstream.Credential = CredentialClientCredentials
			s.Assertion.IssuerURL, s.Assertion.KeyFile, s.Assertion.Header = "https://p.example.com", "k.pem", "Authorization"
		}, "Assertion.Header", "choose another header"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := testConfig(srv, "http://127.0.0.1:1")
			c.edit(&s)
			_, err := Compile(s.Config, s.IDP)
			var ke *FieldError
			if err == nil || !errors.As(err, &ke) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.key) {
				t.Fatalf("error %v, want one on %s saying %q", err, c.key, c.want)
			}
		})
	}
	s := testConfig(srv, "http://127.0.0.1:1")
	s.IDP.ClientSecret = "x"
	s.Upstream.Credential, s.Upstream.Audience, s.Upstream.Scopes = CredentialExchange, "orders-api", []string{"orders"}
	if _, err := Compile(s.Config, s.IDP); err != nil {
		t.Errorf("a valid exchange upstream: %v", err)
	}
}

// TestExchangeSignOut: a sign-out of a browser session (GET /auth/logout)
// reports the session's provider sid (idp.Config.SessionEnded), and the
// exchanged tokens of that session are dropped.
func TestExchangeSignOut(t *testing.T) {
	srv := idptest.NewServer(t, idptest.Options{Clients: []idptest.Client{proxyClient, ordersClient}})
	srv.SetUser(idptest.User{Username: "alice", RealmRoles: []string{"creator"}})
	srv.SetClaimsHook(func(typ string, c map[string]any) {
		if typ == "Bearer" && c["azp"] == "shortener" {
			c["aud"] = []any{"shortener", "account"} // the realm's audience mapper
		}
	})
	up := newUpstream(t)
	var px *Proxy
	ended := make(chan string, 4)
	px, base := sessionProxy(t, srv, up.URL, func(s *testSetup) {
		s.Upstream.Credential = CredentialExchange
		s.Upstream.Audience = "orders-api"
		s.IDP.SessionEnded = func(sid, sub string) { ended <- sid; px.SessionEnded(sid, sub) }
	})
	c := browser(t)
	resp := navigate(t, c, base+"/app/page")
	resp = navigate(t, c, base+resp.Header.Get("Location"))
	resp = navigate(t, c, resp.Header.Get("Location"))
	navigate(t, c, resp.Header.Get("Location"))
	if resp := navigate(t, c, base+"/app/page"); resp.StatusCode != 200 {
		t.Fatalf("the page with the session: %d", resp.StatusCode)
	}
	exchanged := strings.TrimPrefix(up.last(t).Header.Get("Authorization"), "Bearer ")
	sid, _ := claimsOf(t, exchanged)["sid"].(string)
	if sid == "" || srv.Exchanges() != 1 {
		t.Fatalf("exchanged token %v, %d exchanges", claimsOf(t, exchanged), srv.Exchanges())
	}
	navigate(t, c, base+"/auth/logout")
	select {
	case got := <-ended:
		if got != sid {
			t.Fatalf("SessionEnded(%q), want the session's sid %q", got, sid)
		}
	default:
		t.Fatal("the sign-out did not report the session's end")
	}
	if n := px.exchanger.DropSession(sid); n != 0 {
		t.Errorf("%d exchanged tokens of the signed-out session still cached", n)
	}
}
