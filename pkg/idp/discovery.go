package idp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// maxProviderResponse bounds discovery and JWKS documents.
const maxProviderResponse = 1 << 20

// providerMetadata is the part of the OIDC discovery document we use.
type providerMetadata struct {
	Issuer                string `json:"issuer"`
	AuthorizationEndpoint string `json:"authorization_endpoint"`
	TokenEndpoint         string `json:"token_endpoint"`
	JWKSURI               string `json:"jwks_uri"`
	UserinfoEndpoint      string `json:"userinfo_endpoint"`
	EndSessionEndpoint    string `json:"end_session_endpoint"`
	RevocationEndpoint    string `json:"revocation_endpoint"`
}

// keycloakDefaults fills absent endpoints with Keycloak's paths under issuer.
func (m *providerMetadata) keycloakDefaults(issuer string) {
	base := issuer + "/protocol/openid-connect"
	for _, f := range []struct {
		v    *string
		path string
	}{
		{&m.AuthorizationEndpoint, "/auth"},
		{&m.TokenEndpoint, "/token"},
		{&m.JWKSURI, "/certs"},
		{&m.UserinfoEndpoint, "/userinfo"},
		{&m.EndSessionEndpoint, "/logout"},
		{&m.RevocationEndpoint, "/revoke"},
	} {
		if *f.v == "" {
			*f.v = base + f.path
		}
	}
}

// discover fetches {issuer}/.well-known/openid-configuration. The document's
// issuer must equal ours (OpenID Connect Discovery §4.3).
func discover(ctx context.Context, c *http.Client, issuer string) (*providerMetadata, error) {
	var m providerMetadata
	if err := getJSON(ctx, c, issuer+"/.well-known/openid-configuration", &m); err != nil {
		return nil, fmt.Errorf("idp: discovery: %w", err)
	}
	if m.Issuer != issuer {
		return nil, fmt.Errorf("idp: discovery: issuer %q does not match the expected %q", m.Issuer, issuer)
	}
	for _, u := range []string{m.AuthorizationEndpoint, m.TokenEndpoint, m.JWKSURI, m.EndSessionEndpoint, m.RevocationEndpoint} {
		if u != "" {
			if err := checkHTTPURL(u); err != nil {
				return nil, fmt.Errorf("idp: discovery: endpoint %w", err)
			}
		}
	}
	m.keycloakDefaults(issuer)
	return &m, nil
}

// errTooLarge reports a provider response over maxProviderResponse.
var errTooLarge = errors.New("response too large")

// getJSON GETs url and decodes a JSON body of at most maxProviderResponse
// bytes into v. The caller's ctx carries the timeout.
func getJSON(ctx context.Context, c *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("GET %s: status %s", url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxProviderResponse+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if len(body) > maxProviderResponse {
		return fmt.Errorf("GET %s: %w (limit %d bytes)", url, errTooLarge, maxProviderResponse)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}
