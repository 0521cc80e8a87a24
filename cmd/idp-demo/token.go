package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// DemoUser is the one user of the development provider.
const DemoUser = "alice"

// UserToken returns an access token of user from the demo provider at
// providerURL (e.g. http://127.0.0.1:8080): the web client's
// authorization-code flow with PKCE, as a browser would run it, except
// that the code is taken from the redirect instead of being delivered to
// redirectURI (which must be the proxy's registered /auth/callback).
func UserToken(ctx context.Context, providerURL, redirectURI, user string) (string, error) {
	if user != DemoUser {
		return "", fmt.Errorf("the demo provider has one user, %s (not %q)", DemoUser, user)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	authURL, tokenURL, err := discoverEndpoints(ctx, c, strings.TrimSuffix(providerURL, "/"))
	if err != nil {
		return "", err
	}

	verifier := oauth2.GenerateVerifier()
	q := url.Values{
		"response_type": {"code"}, "client_id": {WebClientID}, "redirect_uri": {redirectURI},
		"scope": {"openid"}, "state": {"idp-demo-token"},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL+"?"+q.Encode(), nil)
	if err != nil {
		return "", fmt.Errorf("provider address: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", fmt.Errorf("is the demo running (make demo)? %w", err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	loc, err := resp.Location()
	if resp.StatusCode != http.StatusFound || err != nil {
		return "", fmt.Errorf("the provider's authorization endpoint answered %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	code := loc.Query().Get("code")
	if code == "" {
		return "", fmt.Errorf("the provider refused the sign-in: %s %s", loc.Query().Get("error"), loc.Query().Get("error_description"))
	}

	form := url.Values{
		"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI},
		"client_id": {WebClientID}, "client_secret": {WebClientSecret}, "code_verifier": {verifier},
	}
	req, err = http.NewRequestWithContext(ctx, http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err = c.Do(req)
	if err != nil {
		return "", fmt.Errorf("token endpoint: %w", err)
	}
	defer resp.Body.Close()
	var doc struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc); err != nil {
		return "", fmt.Errorf("token endpoint answered %d: %w", resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusOK || doc.AccessToken == "" {
		return "", errors.New("token endpoint refused the code: " + doc.Error + " " + doc.Description)
	}
	return doc.AccessToken, nil
}

// discoverEndpoints reads the authorization and token endpoints from the
// demo provider's discovery document: the realm's (--shape keycloak), or
// the plain issuer's at the provider's root (the other shapes).
func discoverEndpoints(ctx context.Context, c *http.Client, providerURL string) (authURL, tokenURL string, err error) {
	for _, issuer := range []string{providerURL + "/realms/" + Realm, providerURL} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, issuer+"/.well-known/openid-configuration", nil)
		if err != nil {
			return "", "", fmt.Errorf("provider address: %w", err)
		}
		resp, err := c.Do(req)
		if err != nil {
			return "", "", fmt.Errorf("is the demo running (make demo)? %w", err)
		}
		var doc struct {
			Auth  string `json:"authorization_endpoint"`
			Token string `json:"token_endpoint"`
		}
		derr := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && derr == nil && doc.Auth != "" && doc.Token != "" {
			return doc.Auth, doc.Token, nil
		}
	}
	return "", "", fmt.Errorf("no discovery document at %s/realms/%s or %s: is it the demo's provider?", providerURL, Realm, providerURL)
}
