package main

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

// assertionHandlerOptions identifies the shortener's callers by the
// proxy's assertion alone, verified by p (cmd/shortener's --trust-issuer
// mode, which lives in an internal package): no valid assertion is a 401,
// identity headers are ignored, and the issuer's keys not loaded is a 503.
func assertionHandlerOptions(p *idp.Plugin) shortener.HandlerOptions {
	return shortener.HandlerOptions{
		Authenticate: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				vals := r.Header.Values(assertionHeader)
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
