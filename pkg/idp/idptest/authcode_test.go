package idptest_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

const (
	cid      = "shortener"
	csecret  = "shortener-secret"
	redirect = "http://app.example/auth/callback"
	verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk0123"
)

func challenge(v string) string {
	sum := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

var noRedirects = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func newProvider(t *testing.T, o idptest.Options) *idptest.Server {
	o.Clients = append(o.Clients,
		idptest.Client{ID: cid, Secret: csecret, RedirectURIs: []string{redirect}},
		idptest.Client{ID: "other", Secret: "other-secret"})
	return idptest.NewServer(t, o)
}

// authorize calls the authorization endpoint with the defaults changed by
// set ("" deletes) and returns the status and the redirect's query.
func authorize(t *testing.T, s *idptest.Server, set map[string]string) (int, url.Values) {
	t.Helper()
	q := url.Values{
		"response_type": {"code"}, "client_id": {cid}, "redirect_uri": {redirect}, "scope": {"openid profile"},
		"state": {"st-1"}, "nonce": {"n-1"}, "code_challenge": {challenge(verifier)}, "code_challenge_method": {"S256"},
	}
	for k, v := range set {
		if v == "" {
			q.Del(k)
		} else {
			q.Set(k, v)
		}
	}
	resp, err := noRedirects.Get(s.Issuer + "/protocol/openid-connect/auth?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return resp.StatusCode, nil
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	if got := loc.Scheme + "://" + loc.Host + loc.Path; got != redirect {
		t.Fatalf("redirected to %s", got)
	}
	return resp.StatusCode, loc.Query()
}

// post sends a form to the realm endpoint path and decodes a JSON answer.
func post(t *testing.T, s *idptest.Server, path string, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(s.Issuer+"/protocol/openid-connect/"+path, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	return resp.StatusCode, m
}

func codeForm(code string) url.Values {
	return url.Values{
		"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect},
		"code_verifier": {verifier}, "client_id": {cid}, "client_secret": {csecret},
	}
}

func claimsOf(t *testing.T, tok string) map[string]any {
	t.Helper()
	c := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(tok, c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAuthorizationCodeFlow(t *testing.T) {
	s := newProvider(t, idptest.Options{User: idptest.User{Username: "bob", RealmRoles: []string{"creator"}}})
	status, q := authorize(t, s, nil)
	if status != http.StatusFound || q.Get("state") != "st-1" || q.Get("code") == "" || q.Get("iss") != s.Issuer {
		t.Fatalf("authorize: %d %v", status, q)
	}
	status, tok := post(t, s, "token", codeForm(q.Get("code")))
	if status != 200 {
		t.Fatalf("code grant: %d %v", status, tok)
	}
	at, _ := tok["access_token"].(string)
	id := claimsOf(t, tok["id_token"].(string))
	sum := sha256.Sum256([]byte(at))
	for k, want := range map[string]any{
		"typ": "ID", "aud": cid, "azp": cid, "nonce": "n-1", "sub": "user-bob", "iss": s.Issuer,
		"at_hash": base64.RawURLEncoding.EncodeToString(sum[:16]), "preferred_username": "bob",
	} {
		if id[k] != want {
			t.Errorf("id_token %s = %v, want %v", k, id[k], want)
		}
	}
	ac := claimsOf(t, at)
	if ac["azp"] != cid || ac["typ"] != "Bearer" || ac["sid"] != id["sid"] || !strings.Contains(ac["scope"].(string), "openid") {
		t.Fatalf("access token claims: %v", ac)
	}
	rt := tok["refresh_token"].(string)
	rc := claimsOf(t, rt)
	if rc["typ"] != "Refresh" {
		t.Fatalf("refresh token typ %v", rc["typ"])
	}
	if h, _, _ := strings.Cut(rt, "."); !strings.Contains(decodeSeg(t, h), `"HS256"`) {
		t.Fatal("refresh token is not HS256 as Keycloak's")
	}

	// The code is single-use.
	if status, m := post(t, s, "token", codeForm(q.Get("code"))); status != 400 || m["error"] != "invalid_grant" {
		t.Fatalf("code reuse: %d %v", status, m)
	}

	// Refresh rotates: the new token works, the old one does not.
	rf := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {cid}, "client_secret": {csecret}}
	status, tok2 := post(t, s, "token", rf)
	if status != 200 || tok2["refresh_token"] == rt || tok2["id_token"] == nil {
		t.Fatalf("refresh: %d %v", status, tok2)
	}
	if status, m := post(t, s, "token", rf); status != 400 || m["error"] != "invalid_grant" {
		t.Fatalf("rotated-out refresh token: %d %v", status, m)
	}
	rf.Set("refresh_token", tok2["refresh_token"].(string))
	other := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rf.Get("refresh_token")}, "client_id": {"other"}, "client_secret": {"other-secret"}}
	if status, m := post(t, s, "token", other); status != 400 || m["error"] != "invalid_grant" {
		t.Fatalf("refresh by another client: %d %v", status, m)
	}
	// Revocation.
	if status, _ := post(t, s, "revoke", url.Values{"token": {rf.Get("refresh_token")}, "client_id": {cid}, "client_secret": {csecret}}); status != 200 {
		t.Fatalf("revoke: %d", status)
	}
	if status, m := post(t, s, "token", rf); status != 400 || m["error"] != "invalid_grant" {
		t.Fatalf("revoked refresh token: %d %v", status, m)
	}
}

func decodeSeg(t *testing.T, seg string) string {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCodeGrantRejections(t *testing.T) {
	s := newProvider(t, idptest.Options{})
	cases := []struct {
		name   string
		change func(url.Values)
		status int
		err    string
	}{
		{"wrong verifier", func(f url.Values) { f.Set("code_verifier", verifier+"x") }, 400, "invalid_grant"},
		{"no verifier", func(f url.Values) { f.Del("code_verifier") }, 400, "invalid_grant"},
		{"other redirect_uri", func(f url.Values) { f.Set("redirect_uri", "http://app.example/other") }, 400, "invalid_grant"},
		{"other client", func(f url.Values) { f.Set("client_id", "other"); f.Set("client_secret", "other-secret") }, 400, "invalid_grant"},
		{"wrong secret", func(f url.Values) { f.Set("client_secret", "nope") }, 401, "invalid_client"},
		{"unknown code", func(f url.Values) { f.Set("code", "forged") }, 400, "invalid_grant"},
		{"unknown grant", func(f url.Values) { f.Set("grant_type", "password") }, 400, "unsupported_grant_type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, q := authorize(t, s, nil)
			f := codeForm(q.Get("code"))
			tc.change(f)
			if status, m := post(t, s, "token", f); status != tc.status || m["error"] != tc.err {
				t.Fatalf("%d %v, want %d %s", status, m, tc.status, tc.err)
			}
		})
	}
}

func TestAuthorizeRejections(t *testing.T) {
	s := newProvider(t, idptest.Options{})
	for _, tc := range []struct {
		name   string
		set    map[string]string
		status int
		err    string
	}{
		{"unknown client", map[string]string{"client_id": "nobody"}, 400, ""},
		{"unregistered redirect", map[string]string{"redirect_uri": "https://evil.example/cb"}, 400, ""},
		{"no redirect", map[string]string{"redirect_uri": ""}, 400, ""},
		{"no PKCE", map[string]string{"code_challenge": ""}, 302, "invalid_request"},
		{"plain PKCE", map[string]string{"code_challenge_method": "plain"}, 302, "invalid_request"},
		{"implicit", map[string]string{"response_type": "token"}, 302, "unsupported_response_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, q := authorize(t, s, tc.set)
			if status != tc.status || q.Get("error") != tc.err || q.Get("code") != "" {
				t.Fatalf("%d %v, want %d error=%s", status, q, tc.status, tc.err)
			}
		})
	}
	s.SetLoginError("access_denied")
	if _, q := authorize(t, s, nil); q.Get("error") != "access_denied" || q.Get("state") != "st-1" {
		t.Fatalf("login error: %v", q)
	}
}

func TestLogoutEndpoints(t *testing.T) {
	s := newProvider(t, idptest.Options{OpaqueRefreshTokens: true})
	login := func() map[string]any {
		_, q := authorize(t, s, nil)
		status, tok := post(t, s, "token", codeForm(q.Get("code")))
		if status != 200 {
			t.Fatalf("code grant: %d %v", status, tok)
		}
		return tok
	}
	tok := login()
	if strings.Count(tok["refresh_token"].(string), ".") != 0 {
		t.Fatal("refresh token is not opaque")
	}
	if status, _ := post(t, s, "logout", url.Values{"refresh_token": {"nope"}, "client_id": {cid}, "client_secret": {csecret}}); status != 400 {
		t.Fatalf("logout with an unknown token: %d", status)
	}
	if status, _ := post(t, s, "logout", url.Values{"refresh_token": {tok["refresh_token"].(string)}, "client_id": {cid}, "client_secret": {csecret}}); status != 204 {
		t.Fatalf("back-channel logout: %d", status)
	}
	if s.Sessions() != 0 {
		t.Fatalf("sessions after logout: %d", s.Sessions())
	}
	rf := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}, "client_id": {cid}, "client_secret": {csecret}}
	if status, m := post(t, s, "token", rf); status != 400 || m["error"] != "invalid_grant" {
		t.Fatalf("refresh after logout: %d %v", status, m)
	}

	// Front channel: the session of id_token_hint ends; the redirect is
	// honoured only for a registered URI.
	tok = login()
	front := func(q url.Values) *http.Response {
		resp, err := noRedirects.Get(s.Issuer + "/protocol/openid-connect/logout?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := front(url.Values{"post_logout_redirect_uri": {redirect}}); r.StatusCode != 400 {
		t.Fatalf("redirect without hint: %d", r.StatusCode)
	}
	hint := tok["id_token"].(string)
	if r := front(url.Values{"id_token_hint": {hint}, "post_logout_redirect_uri": {"https://evil.example/"}}); r.StatusCode != 400 {
		t.Fatalf("unregistered post-logout redirect: %d", r.StatusCode)
	}
	r := front(url.Values{"id_token_hint": {hint}, "post_logout_redirect_uri": {redirect}, "state": {"x"}})
	if r.StatusCode != 302 || r.Header.Get("Location") != redirect+"?state=x" || s.Sessions() != 0 {
		t.Fatalf("front-channel logout: %d %q, sessions %d", r.StatusCode, r.Header.Get("Location"), s.Sessions())
	}
}

func TestDiscoveryAdvertisesFlow(t *testing.T) {
	s := newProvider(t, idptest.Options{})
	resp, err := http.Get(s.Issuer + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	p := s.Issuer + "/protocol/openid-connect"
	for k, want := range map[string]string{
		"authorization_endpoint": p + "/auth", "token_endpoint": p + "/token", "revocation_endpoint": p + "/revoke",
		"end_session_endpoint": p + "/logout", "jwks_uri": p + "/certs",
	} {
		if m[k] != want {
			t.Errorf("%s = %v, want %s", k, m[k], want)
		}
	}
}

// TestStart: a provider outside tests listens on the given address,
// panics on misuse and stops on Close.
func TestStart(t *testing.T) {
	s, err := idptest.Start(idptest.Options{Addr: "127.0.0.1:0", Realm: "demo2"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") || s.Issuer != s.URL+"/realms/demo2" {
		t.Fatalf("URL %q issuer %q", s.URL, s.Issuer)
	}
	resp, err := http.Get(s.Issuer + "/.well-known/openid-configuration")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("discovery: %v %v", resp, err)
	}
	resp.Body.Close()
	func() {
		defer func() {
			if recover() == nil {
				t.Error("MintWith with an unsupported Alg did not panic under Start")
			}
		}()
		s.MintWith(idptest.MintOptions{Alg: "HS256"}, nil)
	}()
	s.Close()
	s.Close() // idempotent
	if _, err := (&http.Client{Timeout: time.Second}).Get(s.Issuer + "/.well-known/openid-configuration"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("after Close: %v, want connection refused", err)
	}
	if _, err := idptest.Start(idptest.Options{Addr: "256.0.0.1:1"}); err == nil {
		t.Fatal("Start on an invalid address succeeded")
	}
}

// As Keycloak: client_credentials only for a client with a service account.
func TestClientCredentialsNeedsServiceAccount(t *testing.T) {
	srv := idptest.NewServer(t, idptest.Options{Clients: []idptest.Client{
		{ID: "web", Secret: "web-secret"},
		{ID: "svc", Secret: "svc-secret", ServiceAccount: true},
	}})
	for _, tc := range []struct {
		id     string
		status int
	}{{"web", http.StatusUnauthorized}, {"svc", http.StatusOK}} {
		resp, err := http.PostForm(srv.TokenURL(), url.Values{
			"grant_type": {"client_credentials"}, "client_id": {tc.id}, "client_secret": {tc.id + "-secret"},
		})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || (tc.status != 200 && !strings.Contains(string(body), "unauthorized_client")) {
			t.Errorf("%s: %d %s, want %d", tc.id, resp.StatusCode, body, tc.status)
		}
	}
}
