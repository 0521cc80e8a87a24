package idpauth

import (
	"errors"
	"net/http"

	"github.com/idp-proxy/idp-proxy/internal/problem"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// AssertionOptions returns handler options that identify callers by
// idp-proxy's identity assertion alone (credential: assertion), read from
// header and verified by p, a plugin whose issuer is the proxy and whose
// audience is this shortener. Its sub owns the links, its roles are the
// caller's roles; identity headers are ignored. A route that needs an
// identity answers 401 without exactly one valid assertion, and 503 while
// the proxy's keys are not loaded.
func AssertionOptions(p *idp.Plugin, header string) shortener.HandlerOptions {
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
		Owner:       Owner,
		Roles:       Roles,
		DisplayName: DisplayName,
	}
}
