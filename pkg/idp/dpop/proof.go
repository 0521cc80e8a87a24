package dpop

import (
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"time"
)

// ProofParams are the contents of a proof NewProof makes.
type ProofParams struct {
	Method      string    // htm
	URL         string    // htu; its query and fragment are dropped
	AccessToken string    // when not empty, ath is its hash
	Nonce       string    // the server's nonce, if it gave one
	JTI         string    // empty: 16 random bytes, base64url
	IssuedAt    time.Time // zero: time.Now()
	// Alg is the signing algorithm; empty: ES256, ES384 or ES512 for an
	// ECDSA key by its curve, RS256 for RSA, EdDSA for Ed25519.
	Alg string
}

// NewProof makes a DPoP proof signed by key (an *ecdsa.PrivateKey,
// *rsa.PrivateKey or ed25519.PrivateKey, or any crypto.Signer whose
// public key is one of those).
func NewProof(key crypto.Signer, p ProofParams) (string, error) {
	return "", errors.New("dpop: not implemented")
}

// AccessTokenHash returns the ath of token: base64url(SHA-256(token)).
func AccessTokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
