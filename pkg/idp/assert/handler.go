package assert

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// wellKnown is the discovery document's path under the issuer (OpenID
// Connect Discovery §4.1).
const wellKnown = "/.well-known/openid-configuration"

// documents returns the JWKS and the discovery document of an issuer.
func documents(issuer string, keys []jwk, algs []string) (jwks, disco []byte) {
	jwks, _ = json.Marshal(struct {
		Keys []jwk `json:"keys"`
	}{keys}) // plain strings: cannot fail
	base := strings.TrimSuffix(issuer, "/")
	disco, _ = json.Marshal(map[string]any{
		"issuer":                                issuer,
		"jwks_uri":                              base + jwksPath,
		"id_token_signing_alg_values_supported": algs,
		// Required by Discovery §3; the issuer runs no authorization
		// endpoint, so these only describe its tokens.
		"response_types_supported": []string{"id_token"},
		"subject_types_supported":  []string{"public"},
		"claims_supported": []string{"iss", "aud", "sub", "iat", "nbf", "exp", "jti", "preferred_username",
			"email", "email_verified", "roles", "groups", "issuer_name", "acr", "amr", "auth_time"},
	})
	return jwks, disco
}

// Paths returns the paths the Handler answers: the discovery document's
// and the JWKS's, under the issuer URL's path.
func (s *Signer) Paths() (discovery, jwks string) {
	u, _ := url.Parse(s.issuer) // checked by NewSigner
	base := strings.TrimSuffix(u.Path, "/")
	return base + wellKnown, base + jwksPath
}

// Handler serves the discovery document and the JWKS at the paths Paths
// names (GET and HEAD; 405 for other methods, 404 for other paths), with
// a short public cache lifetime so that a new key's publication reaches
// verifiers well before it signs.
func (s *Signer) Handler() http.Handler {
	discovery, jwksP := s.Paths()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		switch r.URL.Path {
		case discovery:
			body = s.disco
		case jwksP:
			body = s.jwks
		default:
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "public, max-age=300")
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(body)
	})
}
