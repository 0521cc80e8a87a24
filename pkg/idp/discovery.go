package idp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"golang.org/x/oauth2"
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
	// TokenAuthMethods are the client authentication methods of the
	// token endpoint (client_secret_basic when absent: Discovery §3).
	TokenAuthMethods []string `json:"token_endpoint_auth_methods_supported"`
	// RevocationAuthMethods are those of the revocation endpoint
	// (client_secret_basic when absent: RFC 8414 §2).
	RevocationAuthMethods []string `json:"revocation_endpoint_auth_methods_supported"`
	// keycloak: a Keycloak realm's document (Config.ServerURL and Realm).
	keycloak bool
}

// tokenAuthStyle is how the client authenticates at the token endpoint;
// see authStyle.
func (m *providerMetadata) tokenAuthStyle() oauth2.AuthStyle { return m.authStyle(m.TokenAuthMethods) }

// authStyle is how the client authenticates at an endpoint that supports
// methods: in the form (client_secret_post) at a Keycloak realm, as
// always, and where it is listed; otherwise HTTP Basic
// (client_secret_basic), the default of the metadata specifications and
// the only method some providers accept.
func (m *providerMetadata) authStyle(methods []string) oauth2.AuthStyle {
	if m.keycloak || slices.Contains(methods, "client_secret_post") {
		return oauth2.AuthStyleInParams
	}
	return oauth2.AuthStyleInHeader
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

// discover fetches the discovery document of issuer. The well-known path is
// appended to the issuer without its trailing slash (OpenID Connect
// Discovery §4.1), and the document's issuer must equal ours byte for byte
// (§4.3). A Keycloak realm (keycloak) gets Keycloak's paths for absent
// endpoints; any other issuer's absent endpoints stay absent, and the JWKS
// is required.
func discover(ctx context.Context, c *http.Client, issuer string, keycloak bool) (*providerMetadata, error) {
	var m providerMetadata
	if err := getJSON(ctx, c, wellKnownURL(issuer), &m); err != nil {
		return nil, fmt.Errorf("idp: discovery: %w", err)
	}
	if m.Issuer != issuer {
		return nil, fmt.Errorf("%w: %s names the issuer %q, not the configured %q (OpenID Connect Discovery §4.3: they must be equal byte for byte)",
			ErrDiscovery, wellKnownURL(issuer), m.Issuer, issuer)
	}
	for _, e := range m.endpoints() {
		if *e.v != "" {
			if err := checkHTTPURL(*e.v); err != nil {
				return nil, fmt.Errorf("%w: %s: %w", ErrDiscovery, e.name, err)
			}
		}
	}
	m.keycloak = keycloak
	if keycloak {
		m.keycloakDefaults(issuer)
	} else if m.JWKSURI == "" {
		return nil, fmt.Errorf("%w: %s has no jwks_uri: the provider's keys cannot be found", ErrDiscovery, wellKnownURL(issuer))
	}
	return &m, nil
}

// wellKnownURL is issuer's discovery URL (OpenID Connect Discovery §4.1:
// a trailing slash of the issuer is removed before the path is appended).
func wellKnownURL(issuer string) string {
	return strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
}

// endpoints lists m's endpoint fields by their discovery names.
func (m *providerMetadata) endpoints() []struct {
	name string
	v    *string
} {
	return []struct {
		name string
		v    *string
	}{
		{"authorization_endpoint", &m.AuthorizationEndpoint},
		{"token_endpoint", &m.TokenEndpoint},
		{"jwks_uri", &m.JWKSURI},
		{"end_session_endpoint", &m.EndSessionEndpoint},
		{"revocation_endpoint", &m.RevocationEndpoint},
	}
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

// errNotDiscovered: the provider's discovery document has not been loaded
// yet.
var errNotDiscovered = fmt.Errorf("%w: the identity provider has not been discovered yet", ErrUnavailable)

// missingEndpointError: the provider's discovery document lacks an
// endpoint a feature needs. Only a provider other than a Keycloak realm can
// lack one (a realm's absent endpoints get Keycloak's paths). It wraps
// ErrUnavailable: the feature answers 503 until the provider publishes it.
type missingEndpointError struct{ name string }

func (e *missingEndpointError) detail() string {
	return "the identity provider's discovery document has no " + e.name
}
func (e *missingEndpointError) Error() string { return "idp: " + e.detail() }
func (e *missingEndpointError) Unwrap() error { return ErrUnavailable }
