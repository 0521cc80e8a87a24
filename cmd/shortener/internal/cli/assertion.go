package cli

import (
	"context"
	"log/slog"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// newAssertionVerifier returns the plugin that verifies idp-proxy's
// assertions (--trust-issuer): the proxy is an OpenID Connect issuer, this
// shortener the audience.
func newAssertionVerifier(ctx context.Context, cfg config, log *slog.Logger) (*idp.Plugin, error) {
	return idp.New(ctx, idp.Config{
		IssuerURL:      cfg.TrustIssuer,
		ClientID:       cfg.TrustAudience,
		Algorithms:     []string{"ES256", "ES384", "ES512", "RS256", "EdDSA"},
		Claims:         idp.ClaimMapping{Preset: idp.PresetGeneric},
		Logger:         log,
		TracerProvider: cfg.tracerProvider,
	})
}
