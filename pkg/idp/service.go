package idp

import (
	"context"
	"fmt"
	"net"
	"net/http"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Service-to-service calls: a service's own tokens (client_credentials)
// and forwarding of the caller's token.

// ClientCredentials returns a TokenSource of this client's own access
// tokens (the client_credentials grant, spec §4.4): a form-encoded POST of
// grant_type, client_id and client_secret (and scope when scopes are
// given; with Config.IssuerURL, the client's credentials go in HTTP Basic
// instead unless the discovery document lists client_secret_post) to the
// provider's token endpoint — the discovered one; for a
// Keycloak realm (ServerURL and Realm) before discovery has completed,
// {server_url}/realms/{realm}/protocol/openid-connect/token. With
// Config.IssuerURL nothing is guessed: before discovery, or when the
// discovery document has no token_endpoint, Token fails with an error
// wrapping ErrUnavailable that says so. Calls use Config.HTTPClient and
// are bounded by Config.HTTPTimeout.
//
// Tokens are reused until 10 s before they expire (oauth2.ReuseTokenSource),
// so one TokenSource should be shared by the whole service, typically as
// the transport of an http.Client:
//
//	client := oauth2.NewClient(ctx, p.ClientCredentials(ctx))
//
// ctx bounds every future token request: pass a context that lives as long
// as the TokenSource (not a request's context). Config.ClientSecret is
// required; without it Token fails with an error wrapping ErrConfig.
// Provider refusals wrap *oauth2.RetrieveError.
func (p *Plugin) ClientCredentials(ctx context.Context, scopes ...string) oauth2.TokenSource {
	return oauth2.ReuseTokenSource(nil, &ccSource{p: p, ctx: ctx, scopes: scopes})
}

type ccSource struct {
	p      *Plugin
	ctx    context.Context
	scopes []string
}

func (s *ccSource) Token() (*oauth2.Token, error) {
	cfg := s.p.cfg
	if cfg.ClientSecret == "" {
		return nil, fmt.Errorf("%w: client_credentials needs client_secret", ErrConfig)
	}
	tokenURL, style, err := s.p.tokenEndpoint()
	if err != nil {
		return nil, fmt.Errorf("idp: client_credentials: %w", err)
	}
	cc := clientcredentials.Config{
		ClientID:     cfg.ClientID,
		ClientSecret: cfg.ClientSecret,
		TokenURL:     tokenURL,
		Scopes:       s.scopes,
		AuthStyle:    style,
	}
	ctx, cancel := context.WithTimeout(s.ctx, cfg.HTTPTimeout)
	defer cancel()
	tok, err := cc.Token(context.WithValue(ctx, oauth2.HTTPClient, cfg.HTTPClient))
	if err != nil {
		return nil, fmt.Errorf("idp: client_credentials: %w", err)
	}
	return tok, nil
}

// tokenEndpoint returns the provider's token endpoint and how to
// authenticate there: the discovered one, or for a Keycloak realm not
// discovered yet, Keycloak's path with the credentials in the form.
func (p *Plugin) tokenEndpoint() (string, oauth2.AuthStyle, error) {
	m := p.keys.meta.Load()
	switch {
	case m != nil && m.TokenEndpoint != "":
		return m.TokenEndpoint, m.tokenAuthStyle(), nil
	case m != nil:
		return "", 0, &missingEndpointError{name: "token_endpoint"}
	case p.cfg.IssuerURL == "":
		return p.issuer + "/protocol/openid-connect/token", oauth2.AuthStyleInParams, nil
	}
	return "", 0, errNotDiscovered
}

// ForwardToken returns a RoundTripper that sends the caller's access token
// (RawTokenFrom of the outgoing request's context, set by Middleware or
// the With* adapters) as "Authorization: Bearer <token>" to a downstream
// API that accepts tokens of the same realm (spec §5.8). It is
// &TokenForwarder{Base: base}; see TokenForwarder for the rules that keep
// the token from leaking.
//
//	client := &http.Client{Transport: idp.ForwardToken(nil)}
//	req, _ := http.NewRequestWithContext(r.Context(), "GET", "https://reports.internal/api", nil)
//	resp, err := client.Do(req)
func ForwardToken(base http.RoundTripper) http.RoundTripper {
	return &TokenForwarder{Base: base}
}

// TokenForwarder is the RoundTripper of ForwardToken. For each request it:
//
//   - leaves a request that already has an Authorization header alone (it
//     is never overwritten);
//   - sends a request whose context carries no token as is;
//   - does not add the token to a redirect to another host than the one
//     first asked (http.Client follows redirects through the same
//     RoundTripper; the token belongs to the first host only);
//   - refuses (ErrInsecureTransport) to add it over plain http unless the
//     host is loopback or AllowHTTP is set: a bearer token on the wire is a
//     credential anyone on the path can use;
//   - otherwise adds the header to a clone of the request; the caller's
//     request is not modified.
type TokenForwarder struct {
	// Base performs the requests. [http.DefaultTransport]
	Base http.RoundTripper
	// AllowHTTP permits sending tokens over plain http to hosts that are
	// not loopback, for example inside a private container network.
	// [false]
	AllowHTTP bool
}

// RoundTrip implements http.RoundTripper.
func (f *TokenForwarder) RoundTrip(req *http.Request) (*http.Response, error) {
	base := f.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if _, set := req.Header["Authorization"]; set {
		return base.RoundTrip(req)
	}
	tok, ok := RawTokenFrom(req.Context())
	if !ok || crossHostRedirect(req) {
		return base.RoundTrip(req)
	}
	if req.URL.Scheme != "https" && !f.AllowHTTP && !isLoopback(req.URL.Hostname()) {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, fmt.Errorf("%w to %s (set TokenForwarder.AllowHTTP to permit it)", ErrInsecureTransport, req.URL.Host)
	}
	r2 := req.Clone(req.Context())
	r2.Header.Set("Authorization", "Bearer "+tok)
	return base.RoundTrip(r2)
}

// crossHostRedirect reports whether req is a redirect (http.Client sets
// Response) to another host than the first request of the chain.
func crossHostRedirect(req *http.Request) bool {
	first := req
	for first.Response != nil && first.Response.Request != nil {
		first = first.Response.Request
	}
	return first != req && first.URL.Host != req.URL.Host
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
