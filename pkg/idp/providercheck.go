package idp

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// CheckResult is the outcome of one ProviderCheck.
type CheckResult uint8

const (
	// CheckPassed: the provider answered as the configuration expects.
	CheckPassed CheckResult = iota
	// CheckFailed: the provider is unreachable, names another issuer,
	// publishes no usable key, or refuses the client (Err says which).
	CheckFailed
	// CheckSkipped: not checked, or the provider's answer neither
	// confirms nor refutes (Message says why).
	CheckSkipped
)

// String returns "ok", "FAIL" or "skip".
func (r CheckResult) String() string {
	switch r {
	case CheckPassed:
		return "ok"
	case CheckFailed:
		return "FAIL"
	}
	return "skip"
}

// ProviderCheck is one finding of CheckProvider.
type ProviderCheck struct {
	// IssuerName and Issuer name the trusted issuer checked
	// (Config.IssuerName or TrustedIssuer.Name, and its URL).
	IssuerName, Issuer string
	// What is checked: "discovery", "keys" or "client".
	What   string
	Result CheckResult
	// Message says what was found, for a person.
	Message string
	// Err is set when Result is CheckFailed: it wraps ErrDiscovery (the
	// document names another issuer or is unusable), ErrUnavailable (the
	// provider cannot be reached or fails) or ErrClientRejected.
	Err error
}

// ProviderCheckOptions adjust CheckProvider; the zero value checks all.
type ProviderCheckOptions struct {
	// NoClient leaves out the client's authentication (its secret is not
	// at hand, as in a deploy check that gets secrets later).
	NoClient bool
}

// CheckProvider contacts the identity providers of cfg once, as a deploy
// check does, and reports what the offline validation cannot know. For
// every trusted issuer (the primary first): its discovery document is
// fetched and its issuer compared with the configured one byte for byte
// (OpenID Connect Discovery §4.3), then its key set is fetched and must
// hold a usable signature key. With the /auth routes (IncludeRoutes), the
// client then authenticates at the primary's token endpoint, the way the
// callback does, with a code exchange of a made-up authorization code:
// invalid_grant means the provider accepted the client and refused only
// the code; invalid_client (or Keycloak's 401 unauthorized_client for a
// missing secret) means the client's credentials are refused. No token is
// issued; the provider may log the refused exchange. Each call is bounded
// by HTTPTimeout. The error is for an invalid cfg only.
func CheckProvider(ctx context.Context, cfg Config, o ProviderCheckOptions) ([]ProviderCheck, error) {
	compiled, err := Compile(cfg)
	if err != nil {
		return nil, err
	}
	cfg = compiled.Config()
	client := cfg.HTTPClient
	if client == nil {
		client = defaultHTTPClient(cfg.HTTPTimeout)
	}
	type trusted struct {
		name, url string
		keycloak  bool
	}
	issuers := []trusted{{cfg.IssuerName, cfg.Issuer(), cfg.IssuerURL == ""}}
	for _, t := range cfg.Issuers {
		issuers = append(issuers, trusted{t.Name, t.Issuer(), t.IssuerURL == ""})
	}
	var out []ProviderCheck
	var primary *providerMetadata
	for i, is := range issuers {
		c := ProviderCheck{IssuerName: is.name, Issuer: is.url}
		check := func(what string, r CheckResult, err error, msg string) {
			c.What, c.Result, c.Err, c.Message = what, r, err, msg
			out = append(out, c)
		}
		cctx, cancel := context.WithTimeout(ctx, cfg.HTTPTimeout)
		meta, err := discover(cctx, client, is.url, is.keycloak)
		cancel()
		switch {
		case errors.Is(err, ErrDiscovery):
			check("discovery", CheckFailed, err, strings.TrimPrefix(err.Error(), ErrDiscovery.Error()+": "))
			continue
		case err != nil:
			msg := "the provider cannot be reached: " + strings.TrimPrefix(err.Error(), "idp: discovery: ")
			check("discovery", CheckFailed, fmt.Errorf("%w: %s", ErrUnavailable, msg), msg)
			continue
		}
		check("discovery", CheckPassed, nil, wellKnownURL(is.url)+" names this issuer")
		if n, err := countKeys(ctx, client, cfg.HTTPTimeout, meta.JWKSURI); err != nil {
			check("keys", CheckFailed, err, err.Error())
		} else {
			check("keys", CheckPassed, nil, fmt.Sprintf("%s holds %d usable signature key(s)", meta.JWKSURI, n))
		}
		if i == 0 {
			primary = meta
		}
	}
	c := ProviderCheck{IssuerName: issuers[0].name, Issuer: issuers[0].url, What: "client", Result: CheckSkipped}
	switch {
	case !cfg.IncludeRoutes:
		c.Message = "client " + cfg.ClientID + " not checked: without include_routes it signs nobody in"
	case o.NoClient:
		c.Message = "client " + cfg.ClientID + " not checked: its secret is not at hand"
	case primary == nil:
		c.Message = "client " + cfg.ClientID + " not checked: the provider's discovery failed"
	default:
		c = probeClient(ctx, client, cfg, primary, c)
	}
	return append(out, c), nil
}

// countKeys fetches the key set at jwksURI and counts its usable
// signature keys (none is a failure).
func countKeys(ctx context.Context, client *http.Client, timeout time.Duration, jwksURI string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var raw json.RawMessage
	if err := getJSON(ctx, client, jwksURI, &raw); err != nil {
		return 0, fmt.Errorf("%w: the key set cannot be fetched: %w", ErrUnavailable, err)
	}
	s, err := parseJWKS(raw, slog.New(slog.DiscardHandler))
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrDiscovery, err)
	}
	if len(s.all) == 0 {
		return 0, fmt.Errorf("%w: %s holds no usable signature key", ErrDiscovery, jwksURI)
	}
	return len(s.all), nil
}

// probeClient authenticates the client at the token endpoint with the
// exchange of a made-up code (see CheckProvider) and fills c.
func probeClient(ctx context.Context, client *http.Client, cfg Config, meta *providerMetadata, c ProviderCheck) ProviderCheck {
	who := "client " + cfg.ClientID
	fail := func(sentinel error, format string, args ...any) ProviderCheck {
		c.Result, c.Message = CheckFailed, fmt.Sprintf(format, args...)
		c.Err = fmt.Errorf("%w: %s", sentinel, c.Message)
		return c
	}
	if meta.TokenEndpoint == "" {
		err := &missingEndpointError{name: "token_endpoint"}
		c.Result, c.Err, c.Message = CheckFailed, err, err.detail()
		return c
	}
	conf := &oauth2.Config{
		ClientID:     cfg.ClientID,
		ClientSecret: cfg.ClientSecret,
		Endpoint:     oauth2.Endpoint{AuthURL: meta.AuthorizationEndpoint, TokenURL: meta.TokenEndpoint, AuthStyle: meta.tokenAuthStyle()},
		RedirectURL:  cfg.RedirectURI,
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.HTTPTimeout)
	defer cancel()
	ctx = context.WithValue(ctx, oauth2.HTTPClient, client)
	_, err := conf.Exchange(ctx, "idp-proxy-check-"+rand.Text(), oauth2.VerifierOption(oauth2.GenerateVerifier()))
	var re *oauth2.RetrieveError
	if err == nil {
		c.Result, c.Message = CheckPassed, who+": the provider accepted the client (and, oddly, a made-up code)"
		return c
	}
	if !errors.As(err, &re) || re.Response == nil {
		return fail(ErrUnavailable, "%s: the token endpoint %s cannot be reached: %v", who, meta.TokenEndpoint, err)
	}
	status, code := re.Response.StatusCode, sanitizeErrorCode(re.ErrorCode)
	switch {
	case clientRefused(status, code):
		hint := "check client_id and client_secret"
		if cfg.ClientSecret == "" {
			hint = "client_secret is empty, and the provider requires one for this client"
		}
		return fail(ErrClientRejected, "%s: the token endpoint refused its credentials (%d %s): %s; sign-ins would fail after the provider's login",
			who, status, code, hint)
	case code == "invalid_grant":
		c.Result, c.Message = CheckPassed, who+": authenticated at "+meta.TokenEndpoint+" (the provider refused only the check's made-up code: invalid_grant)"
	case code == "unauthorized_client":
		return fail(ErrClientRejected, "%s may not use the authorization code flow (%d %s): enable it at the provider (Keycloak: Standard flow)",
			who, status, code)
	case status >= 500:
		return fail(ErrUnavailable, "%s: the token endpoint failed (%d %s)", who, status, code)
	default:
		c.Message = fmt.Sprintf("%s: not confirmed: the token endpoint answered %d %s, which neither confirms nor refutes the credentials", who, status, code)
	}
	return c
}
