package exchange

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// endpoint is the token endpoint: given, or found once by OpenID Connect
// discovery from the issuer.
type endpoint struct {
	issuer string
	client *http.Client

	mu  sync.Mutex
	url string
}

// newEndpoint checks the token URL or, without one, the issuer.
func newEndpoint(tokenURL, issuer string, client *http.Client) (*endpoint, error) {
	if tokenURL == "" && issuer == "" {
		return nil, errorsJoin(ErrOptions, "TokenURL or Issuer is required")
	}
	if tokenURL != "" {
		if !absoluteHTTP(tokenURL) {
			return nil, errorsJoin(ErrOptions, "TokenURL %q is not an absolute http(s) URL", tokenURL)
		}
		return &endpoint{url: tokenURL}, nil
	}
	if !absoluteHTTP(issuer) {
		return nil, errorsJoin(ErrOptions, "Issuer %q is not an absolute http(s) URL", issuer)
	}
	return &endpoint{issuer: strings.TrimRight(issuer, "/"), client: client}, nil
}

func absoluteHTTP(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// get returns the token endpoint, discovering it on first use; a failed
// discovery is retried by the next call.
func (e *endpoint) get(ctx context.Context) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.url != "" {
		return e.url, nil
	}
	u, err := discover(ctx, e.client, e.issuer)
	if err != nil {
		return "", err
	}
	e.url = u
	return u, nil
}

// discover reads the issuer's OpenID Connect discovery document: its
// issuer must be the one asked for (OpenID Connect Discovery 1.0 §4.3),
// its token_endpoint an absolute http(s) URL.
func discover(ctx context.Context, c *http.Client, issuer string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, issuer+"/.well-known/openid-configuration", nil)
	if err != nil {
		return "", unavailable(nil, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return "", unavailable(nil, fmt.Errorf("discovery: %w", err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", unavailable(resp, fmt.Errorf("discovery: %s", resp.Status))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return "", unavailable(resp, fmt.Errorf("discovery: %w", err))
	}
	return parseDiscovery(body, issuer)
}

// parseDiscovery reads the token endpoint of issuer's discovery document.
func parseDiscovery(body []byte, issuer string) (string, error) {
	var doc struct {
		Issuer        string `json:"issuer"`
		TokenEndpoint string `json:"token_endpoint"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", unavailable(nil, fmt.Errorf("discovery: %w", err))
	}
	if strings.TrimRight(doc.Issuer, "/") != issuer {
		return "", unavailable(nil, fmt.Errorf("discovery: issuer %q, want %q", doc.Issuer, issuer))
	}
	if !absoluteHTTP(doc.TokenEndpoint) {
		return "", unavailable(nil, fmt.Errorf("discovery: token_endpoint %q", doc.TokenEndpoint))
	}
	return doc.TokenEndpoint, nil
}
