package idptest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"

	"github.com/idp-proxy/idp-proxy/pkg/idp/dpop"
)

// Sender-constrained tokens, for tests of handlers behind pkg/idp or
// idp-proxy that check proofs of possession: tokens bound to a client's
// DPoP key (RFC 9449 cnf.jkt) or to its certificate (RFC 8705
// cnf["x5t#S256"]), and the DPoP proofs that go with them.

// DPoPKey is a client's proof-of-possession key: an ECDSA P-256 key
// (ES256) and its RFC 7638 thumbprint, the cnf.jkt of the tokens bound to
// it.
type DPoPKey struct {
	// Key signs the proofs.
	Key *ecdsa.PrivateKey
	// JKT is the thumbprint of Key's public key.
	JKT string
}

// NewDPoPKey generates a DPoP key. It panics when the system's random
// source fails.
func NewDPoPKey() *DPoPKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic("idptest: " + err.Error())
	}
	jkt, err := dpop.ThumbprintOfKey(&k.PublicKey)
	if err != nil {
		panic("idptest: " + err.Error())
	}
	return &DPoPKey{Key: k, JKT: jkt}
}

// Proof returns a fresh proof (a new jti, issued now) of k for a request
// with method to url (absolute; its query is ignored), carrying token
// (its ath; "" for none). It panics on an invalid url.
func (k *DPoPKey) Proof(method, url, token string) string {
	return k.ProofWith(dpop.ProofParams{Method: method, URL: url, AccessToken: token})
}

// ProofWith returns a proof of k with the given contents (a server nonce,
// a chosen jti or iat, another algorithm): see dpop.ProofParams. It
// panics when dpop.NewProof fails.
func (k *DPoPKey) ProofWith(p dpop.ProofParams) string {
	proof, err := dpop.NewProof(k.Key, p)
	if err != nil {
		panic("idptest: " + err.Error())
	}
	return proof
}

// MintDPoP signs claims bound to key: a copy of claims with cnf.jkt set
// to key's thumbprint, and, when keycloak is true, typ "DPoP" as Keycloak
// (26.4+) marks its DPoP-bound access tokens.
func (s *Server) MintDPoP(claims map[string]any, key *DPoPKey, keycloak bool) string {
	c := maps.Clone(claims)
	c["cnf"] = map[string]any{"jkt": key.JKT}
	if keycloak {
		c["typ"] = "DPoP"
	}
	return s.Mint(c)
}

// MintCertBound signs claims bound to cert (RFC 8705 §3.1): a copy of
// claims with cnf["x5t#S256"] set to cert's thumbprint.
func (s *Server) MintCertBound(claims map[string]any, cert *x509.Certificate) string {
	if cert == nil {
		s.fail("idptest: MintCertBound without a certificate")
		return ""
	}
	c := maps.Clone(claims)
	c["cnf"] = map[string]any{"x5t#S256": CertThumbprint(cert)}
	return s.Mint(c)
}

// CertThumbprint is RFC 8705's x5t#S256 of cert: base64url(SHA-256 of
// its DER).
func CertThumbprint(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.Raw)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// String names the key by its thumbprint, never its private part.
func (k *DPoPKey) String() string { return fmt.Sprintf("DPoPKey(%s)", k.JKT) }

// bindToProof binds a client_credentials token to the client's DPoP key
// when the request carries a proof (RFC 9449 §5): the proof is checked
// for this POST to the token endpoint, claims get cnf.jkt (and, from a
// Keycloak-shaped server, typ "DPoP", as Keycloak 26.4 marks them), and
// the token type is "DPoP". A bad proof is answered 400
// invalid_dpop_proof (§5.1); ok is false then.
func (s *Server) bindToProof(w http.ResponseWriter, r *http.Request, claims map[string]any) (tokenType string, ok bool) {
	proofs := r.Header["Dpop"]
	if len(proofs) == 0 {
		return "Bearer", true
	}
	p, err := s.dpop.Verify(r.Context(), dpop.Request{Method: r.Method, URL: s.TokenURL(), Proofs: proofs})
	if err != nil {
		oauthError(w, http.StatusBadRequest, dpop.CodeInvalidProof, "invalid DPoP proof")
		return "", false
	}
	claims["cnf"] = map[string]any{"jkt": p.JKT}
	if !s.opts.PlainIssuer {
		claims["typ"] = "DPoP"
	}
	return "DPoP", true
}
