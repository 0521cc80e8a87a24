package dpop

import (
	"crypto"
	"encoding/json"
	"errors"
)

// Thumbprint returns the RFC 7638 SHA-256 thumbprint, base64url, of the
// public JWK jwk (a JSON object, as in a proof's jwk header or a JWKS):
// EC (P-256, P-384, P-521), RSA or OKP (Ed25519). The key is checked as
// Verify checks a proof's key (no private member, members well formed and
// consistent, RSA of at least 2048 bits), so that a thumbprint is only
// ever computed for a key Verify would accept.
func Thumbprint(jwk json.RawMessage) (string, error) {
	return "", errors.New("dpop: not implemented")
}

// ThumbprintOfKey returns the RFC 7638 SHA-256 thumbprint, base64url, of
// a public key (*ecdsa.PublicKey, *rsa.PublicKey or ed25519.PublicKey),
// the value a token's cnf.jkt holds for it.
func ThumbprintOfKey(pub crypto.PublicKey) (string, error) {
	return "", errors.New("dpop: not implemented")
}
