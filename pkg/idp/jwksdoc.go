package idp

// The provider's JWKS document: which of its keys can verify tokens.

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/MicahParks/jwkset"
)

// verifyKey is one usable signature-verification key of the provider.
type verifyKey struct {
	kid string
	alg string // the JWK's own alg, "" when absent
	key crypto.PublicKey
}

// keySnapshot is an immutable view of the provider's key set.
type keySnapshot struct {
	byKID  map[string]verifyKey
	all    []verifyKey  // for tokens without kid
	jwks   []jwkset.JWK // the keys of all, as parsed: the key store's content (keyStore)
	digest [32]byte     // identifies the key material, to detect changes
	gen    uint64       // bumped whenever digest changes
}

// minRSABits is the smallest RSA modulus accepted from the JWKS (RFC 7518
// §3.3 requires 2048 bits; shorter keys can be factored or forged).
const minRSABits = 2048

// parseJWKS turns a JWKS document into a snapshot. Keys that cannot verify
// signatures are left out: encryption keys (use "enc"), symmetric keys,
// RSA keys shorter than 2048 bits, keys with key_ops lacking "verify",
// unknown key types. Private key
// material, if a provider ever published it, is reduced to the public half.
func parseJWKS(body []byte, log *slog.Logger) (*keySnapshot, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("idp: jwks: %w", err)
	}
	s := &keySnapshot{byKID: make(map[string]verifyKey, len(doc.Keys))}
	var material []string
	for i, raw := range doc.Keys {
		jwk, err := jwkset.NewJWKFromRawJSON(raw, jwkset.JWKMarshalOptions{}, jwkset.JWKValidateOptions{})
		if err != nil {
			log.Debug("idp: skipping unusable JWK", "index", i, "error", err)
			continue
		}
		m := jwk.Marshal()
		if m.USE != "" && m.USE != jwkset.UseSig {
			continue
		}
		if len(m.KEYOPS) > 0 && !slices.Contains(m.KEYOPS, jwkset.KeyOpsVerify) {
			continue
		}
		key := jwk.Key()
		if pk, ok := key.(interface{ Public() crypto.PublicKey }); ok {
			key = pk.Public()
		}
		switch key := key.(type) {
		case *rsa.PublicKey:
			if key.N.BitLen() < minRSABits {
				log.Warn("idp: skipping an RSA JWK shorter than 2048 bits", "kid", m.KID, "bits", key.N.BitLen())
				continue
			}
		case *ecdsa.PublicKey, ed25519.PublicKey:
		default:
			continue // symmetric or unknown: never a verification key here
		}
		der, err := x509.MarshalPKIXPublicKey(key)
		if err != nil {
			continue
		}
		vk := verifyKey{kid: m.KID, alg: m.ALG.String(), key: key}
		if vk.kid != "" {
			if _, dup := s.byKID[vk.kid]; dup {
				log.Warn("idp: JWKS has a duplicate kid; keeping the first", "kid", vk.kid)
				continue
			}
			s.byKID[vk.kid] = vk
		}
		s.all = append(s.all, vk)
		s.jwks = append(s.jwks, jwk)
		material = append(material, vk.kid+"\x00"+vk.alg+"\x00"+string(der))
	}
	slices.Sort(material)
	s.digest = sha256.Sum256([]byte(strings.Join(material, "\x01")))
	return s, nil
}

// algMatchesKey reports whether a token signed with alg can be verified
// with key, and whether the JWK's own alg (if any) agrees.
func algMatchesKey(alg string, k verifyKey) bool {
	if k.alg != "" && k.alg != alg {
		return false
	}
	switch key := k.key.(type) {
	case *rsa.PublicKey:
		return strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
	case *ecdsa.PublicKey:
		switch alg {
		case "ES256":
			return key.Curve == elliptic.P256()
		case "ES384":
			return key.Curve == elliptic.P384()
		case "ES512":
			return key.Curve == elliptic.P521()
		}
	case ed25519.PublicKey:
		return alg == "EdDSA"
	}
	return false
}
