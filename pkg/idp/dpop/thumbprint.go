package dpop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
)

// Thumbprint returns the RFC 7638 SHA-256 thumbprint, base64url, of the
// public JWK jwk (a JSON object, as in a proof's jwk header or a JWKS):
// EC (P-256, P-384, P-521), RSA or OKP (Ed25519). The key is checked as
// Verify checks a proof's key (no private member, members well formed and
// consistent, RSA of 2048 to 8192 bits), so that a thumbprint is only
// ever computed for a key Verify would accept. Errors are *Error.
func Thumbprint(jwk json.RawMessage) (string, error) {
	k, err := parseJWK(jwk)
	if err != nil {
		return "", err
	}
	return k.jkt, nil
}

// ThumbprintOfKey returns the RFC 7638 SHA-256 thumbprint, base64url, of
// a public key (*ecdsa.PublicKey on P-256, P-384 or P-521, *rsa.PublicKey
// or ed25519.PublicKey), the value a token's cnf.jkt holds for it.
func ThumbprintOfKey(pub crypto.PublicKey) (string, error) {
	c, err := canonicalJWK(pub)
	if err != nil {
		return "", err
	}
	return thumbprintOf(c), nil
}

var errUnsupportedKey = errors.New("dpop: unsupported public key type")

// canonicalJWK returns the public JWK of pub with its required members
// only, in RFC 7638 order: the thumbprint's input, and the jwk header of
// the proofs NewProof makes.
func canonicalJWK(pub crypto.PublicKey) ([]byte, error) {
	enc := base64.RawURLEncoding.EncodeToString
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k == nil || k.Curve == nil {
			return nil, errUnsupportedKey
		}
		crv := k.Curve.Params().Name
		if _, size := ecCurve(crv); size == 0 {
			return nil, fmt.Errorf("dpop: unsupported curve %s", crv)
		}
		point, err := k.Bytes()
		if err != nil {
			return nil, fmt.Errorf("dpop: EC key: %w", err)
		}
		size := (len(point) - 1) / 2
		return canonicalEC(crv, enc(point[1:1+size]), enc(point[1+size:])), nil
	case *rsa.PublicKey:
		if k == nil || k.N == nil || k.E <= 0 {
			return nil, errUnsupportedKey
		}
		return canonicalRSA(enc(big.NewInt(int64(k.E)).Bytes()), enc(k.N.Bytes())), nil
	case ed25519.PublicKey:
		if len(k) != ed25519.PublicKeySize {
			return nil, errUnsupportedKey
		}
		return canonicalOKP("Ed25519", enc(k)), nil
	}
	return nil, errUnsupportedKey
}
