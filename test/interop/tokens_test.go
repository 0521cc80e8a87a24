package interop_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// providerTransport is a transport of its own for clients that POST to
// the provider, whose idle connections are dropped after 4 s, before the
// provider (Node.js) closes them at 5 s: Go does not retry a POST sent on
// a connection the server is closing (see pkg/idp's defaultHTTPClient).
func providerTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.IdleConnTimeout = 4 * time.Second
	return tr
}

// serviceToken fetches a client_credentials access token the way the
// specification (§4.4) tells clients to: a plain form POST of grant_type,
// client_id and client_secret at Keycloak's token path.
func serviceToken(t *testing.T, p *provider) string {
	t.Helper()
	form := url.Values{
		"grant_type":    {"client_credentials"},
		"client_id":     {svcClientID},
		"client_secret": {svcSecret},
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: providerTransport()}
	resp, err := c.PostForm(p.TokenURL(), form)
	if err != nil {
		t.Fatalf("client_credentials: %v", err)
	}
	defer resp.Body.Close()
	var doc struct {
		AccessToken  string `json:"access_token"`
		TokenType    string `json:"token_type"`
		RefreshToken string `json:"refresh_token"`
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("client_credentials: %s: %s", resp.Status, body)
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.AccessToken == "" {
		t.Fatalf("client_credentials: token response %s: %v", body, err)
	}
	if !strings.EqualFold(doc.TokenType, "Bearer") || doc.RefreshToken != "" {
		t.Fatalf("client_credentials: want a Bearer token and no refresh token, got %s", body)
	}
	return doc.AccessToken
}

// claims decodes a JWT's payload without verifying it (the code under test
// verifies; the tests only look at what the provider issued).
func claims(t *testing.T, jwt string) map[string]any {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %.40q", jwt)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("JWT payload: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("JWT payload: %v", err)
	}
	return m
}

// browserlessClient is an http.Client with a cookie jar that stops
// following redirects at any URL starting with stopAt ("" follows all).
func browserlessClient(t *testing.T, stopAt string) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{
		Jar:       jar,
		Timeout:   15 * time.Second,
		Transport: providerTransport(),
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > 10 {
				return http.ErrUseLastResponse
			}
			if stopAt != "" && strings.HasPrefix(req.URL.String(), stopAt) {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
}

var loginFormAction = regexp.MustCompile(`<form id="kc-form-login" method="post" action="([^"]+)"`)

// submitLogin expects resp to be the provider's login page, fills in the
// credentials and posts the form with c, returning the final response.
func submitLogin(t *testing.T, c *http.Client, resp *http.Response, username, password string) *http.Response {
	t.Helper()
	page, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	m := loginFormAction.FindSubmatch(page)
	if resp.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("want the provider's login page, got %s at %s:\n%s", resp.Status, resp.Request.URL, tail(string(page), 2000))
	}
	action, err := resp.Request.URL.Parse(html.UnescapeString(string(m[1])))
	if err != nil {
		t.Fatal(err)
	}
	next, err := c.PostForm(action.String(), url.Values{"username": {username}, "password": {password}})
	if err != nil {
		t.Fatalf("POST login form: %v", err)
	}
	return next
}

// userToken runs the authorization-code flow with PKCE directly against the
// provider, driving its login form with a cookie-jar client instead of a
// browser, and exchanges the code with x/oauth2. redirectURI must be
// registered at the provider; nothing needs to listen there.
func userToken(t *testing.T, p *provider, redirectURI, username, password string) *oauth2.Token {
	t.Helper()
	conf := &oauth2.Config{
		ClientID:     clientID,
		ClientSecret: clientSecret,
		Endpoint:     oauth2.Endpoint{AuthURL: p.AuthURL(), TokenURL: p.TokenURL(), AuthStyle: oauth2.AuthStyleInHeader},
		RedirectURL:  redirectURI,
		Scopes:       []string{"openid", "profile", "email"},
	}
	verifier := oauth2.GenerateVerifier()
	state := oauth2.GenerateVerifier()
	c := browserlessClient(t, redirectURI)
	resp, err := c.Get(conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)))
	if err != nil {
		t.Fatalf("authorization request: %v", err)
	}
	resp = submitLogin(t, c, resp, username, password)
	_ = resp.Body.Close()
	loc, err := resp.Location()
	if err != nil || !strings.HasPrefix(loc.String(), redirectURI) {
		t.Fatalf("login as %s: want a redirect to %s, got %s (Location %v)", username, redirectURI, resp.Status, loc)
	}
	q := loc.Query()
	if q.Get("state") != state || q.Get("code") == "" {
		t.Fatalf("login as %s: bad callback parameters %q", username, loc.RawQuery)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	tok, err := conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("code exchange for %s: %v", username, err)
	}
	return tok
}

// tokenDocument is the JSON answer of idp-proxy's /auth/callback and
// /auth/refresh.
type tokenDocument struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	IDToken      string `json:"id_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
}

// proxyLogin runs the login flow through idp-proxy's /auth routes without a
// browser: GET /auth/login, the provider's login form, and back to
// /auth/callback, whose JSON token document it returns.
func proxyLogin(t *testing.T, s *stack, username, password string) tokenDocument {
	t.Helper()
	doc := proxyCallback(t, s, username, password)
	checkTokenDocument(t, doc, username)
	return doc
}

// proxyCallback signs in through the proxy's /auth/login as username and
// returns the callback's token document, whatever the tokens' claims.
func proxyCallback(t *testing.T, s *stack, username, password string) tokenDocument {
	t.Helper()
	c := browserlessClient(t, "")
	resp, err := c.Get(s.Proxy + "/auth/login")
	if err != nil {
		t.Fatalf("GET /auth/login: %v", err)
	}
	resp = submitLogin(t, c, resp, username, password)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/auth/callback" {
		t.Fatalf("login through the proxy as %s ended with %s at %s: %s", username, resp.Status, resp.Request.URL, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("callback Content-Type %q", ct)
	}
	var doc tokenDocument
	if err := json.Unmarshal(body, &doc); err != nil || doc.AccessToken == "" {
		t.Fatalf("callback body %s: %v", body, err)
	}
	return doc
}

// checkTokenDocument checks a callback/refresh answer for username.
func checkTokenDocument(t *testing.T, doc tokenDocument, username string) {
	t.Helper()
	if doc.AccessToken == "" || doc.RefreshToken == "" || doc.IDToken == "" ||
		!strings.EqualFold(doc.TokenType, "Bearer") || doc.ExpiresIn <= 0 {
		t.Fatalf("incomplete token document: %+v", doc)
	}
	at := claims(t, doc.AccessToken)
	if at["preferred_username"] != username || at["azp"] != clientID || at["typ"] != "Bearer" {
		t.Fatalf("access token claims: %v", at)
	}
	id := claims(t, doc.IDToken)
	if id["aud"] != clientID || id["nonce"] == nil || id["sub"] != at["sub"] {
		t.Fatalf("ID token claims: %v", id)
	}
}
