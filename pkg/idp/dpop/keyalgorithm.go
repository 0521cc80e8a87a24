package dpop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
)

// KeyAlgorithm is the JWS algorithm a key signs with here (proofs, and
// the other JWTs of this module: assertions): ES256, ES384 or ES512 by
// the ECDSA curve, RS256 for RSA of at least 2048 bits (the verifier's
// minimum), EdDSA for Ed25519. Any other key is an error.
func KeyAlgorithm(pub crypto.PublicKey) (string, error) {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return "ES256", nil
		case elliptic.P384():
			return "ES384", nil
		case elliptic.P521():
			return "ES512", nil
		}
		return "", fmt.Errorf("%w: ECDSA on %s: want P-256, P-384 or P-521", errUnsupportedKey, k.Curve.Params().Name)
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return "", errors.New("dpop: an RSA key of fewer than 2048 bits")
		}
		return "RS256", nil
	case ed25519.PublicKey:
		return "EdDSA", nil
	}
	return "", fmt.Errorf("%w %T: want ECDSA (P-256, P-384, P-521), RSA or Ed25519", errUnsupportedKey, pub)
}
