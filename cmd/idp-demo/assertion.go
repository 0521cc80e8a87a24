package main

import (
	"context"
	"log/slog"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// The demo's proxy signs an identity assertion for the shortener
// (credential: assertion) instead of forwarding the caller's token, and
// the shortener verifies it as `shortener --trust-issuer` does: the proxy
// is an OpenID Connect issuer at assertionPath on its own address.
const (
	assertionPath     = "/.idp-proxy"
	assertionAudience = "shortener" // the shortener's --trust-audience
	assertionHeader   = "X-Auth-Request-Assertion"
	assertionKeyFile  = "assertion-keys.pem"
)

// newAssertionVerifier is the shortener's verifier of the proxy's
// assertions: issuer the proxy, audience the shortener (as
// cmd/shortener's --trust-issuer builds it).
func newAssertionVerifier(ctx context.Context, issuerURL string, log *slog.Logger) (*idp.Plugin, error) {
	return idp.New(ctx, idp.Config{
		IssuerURL:  issuerURL,
		ClientID:   assertionAudience,
		Algorithms: []string{"ES256"},
		Claims:     idp.ClaimMapping{Preset: idp.PresetGeneric},
		Logger:     log,
	})
}
