package cli

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/idp-proxy/idp-proxy/internal/problem"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/idpauth"
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

// assertionOptions identifies callers by the assertion in header alone,
// verified by p: its sub owns the links, its roles are the roles for
// --admin-roles. Identity headers are ignored; a route that needs an
// identity answers 401 without a valid assertion, 503 while the issuer's
// keys are not loaded.
func assertionOptions(p *idp.Plugin, header string) shortener.HandlerOptions {
	key := http.CanonicalHeaderKey(header)
	return shortener.HandlerOptions{
		Authenticate: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				vals := r.Header[key]
				if len(vals) != 1 || vals[0] == "" {
					problem.Write(w, http.StatusUnauthorized, "no identity assertion: this service is reached through idp-proxy only")
					return
				}
				id, err := p.VerifyIdentity(r.Context(), vals[0])
				switch {
				case errors.Is(err, idp.ErrUnavailable):
					w.Header().Set("Retry-After", "5")
					problem.Write(w, http.StatusServiceUnavailable, "the identity assertion's issuer (idp-proxy) did not send its keys")
					return
				case err != nil:
					problem.Write(w, http.StatusUnauthorized, "invalid identity assertion")
					return
				}
				next.ServeHTTP(w, r.WithContext(idp.NewContext(r.Context(), id)))
			})
		},
		Owner:       idpauth.Owner,
		Roles:       idpauth.Roles,
		DisplayName: idpauth.DisplayName,
	}
}
