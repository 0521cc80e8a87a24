package dpop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
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
	if p.Method == "" || p.URL == "" {
		return "", fmt.Errorf("dpop: a proof needs the request's method and URL")
	}
	pub := key.Public()
	jwk, err := canonicalJWK(pub)
	if err != nil {
		return "", err
	}
	alg := p.Alg
	if alg == "" {
		if alg, err = KeyAlgorithm(pub); err != nil {
			return "", err
		}
	}
	if k, perr := parseJWK(jwk); perr != nil || !k.fitsAlg(alg) {
		return "", fmt.Errorf("dpop: algorithm %q does not fit the key", alg)
	}
	if p.JTI == "" {
		var b [16]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
		p.JTI = base64.RawURLEncoding.EncodeToString(b[:])
	}
	if p.IssuedAt.IsZero() {
		p.IssuedAt = time.Now()
	}
	htu := p.URL
	if i := strings.IndexAny(htu, "?#"); i >= 0 {
		htu = htu[:i]
	}
	header, err := json.Marshal(struct {
		Typ string          `json:"typ"`
		Alg string          `json:"alg"`
		JWK json.RawMessage `json:"jwk"`
	}{"dpop+jwt", alg, jwk})
	if err != nil {
		return "", err
	}
	claims := struct {
		JTI   string `json:"jti"`
		HTM   string `json:"htm"`
		HTU   string `json:"htu"`
		IAT   int64  `json:"iat"`
		ATH   string `json:"ath,omitempty"`
		Nonce string `json:"nonce,omitempty"`
	}{JTI: p.JTI, HTM: p.Method, HTU: htu, IAT: p.IssuedAt.Unix(), Nonce: p.Nonce}
	if p.AccessToken != "" {
		claims.ATH = AccessTokenHash(p.AccessToken)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding.EncodeToString
	input := enc(header) + "." + enc(payload)
	sig, err := sign(key, alg, input)
	if err != nil {
		return "", err
	}
	return input + "." + enc(sig), nil
}

// sign signs input with key as alg does: a JWS ECDSA signature is r||s,
// each as long as the curve's order (RFC 7518 §3.4), not ASN.1.
func sign(key crypto.Signer, alg, input string) ([]byte, error) {
	if alg == "EdDSA" {
		return key.Sign(rand.Reader, []byte(input), crypto.Hash(0))
	}
	var buf [64]byte
	h := algHash(alg)
	sum := digest(h, []byte(input), &buf)
	var opts crypto.SignerOpts = h
	if alg[0] == 'P' {
		opts = &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: h}
	}
	sig, err := key.Sign(rand.Reader, sum, opts)
	if err != nil || alg[0] != 'E' {
		return sig, err
	}
	pub, ok := key.Public().(*ecdsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("dpop: %s needs an ECDSA key", alg)
	}
	var rs struct{ R, S *big.Int }
	if _, err := asn1.Unmarshal(sig, &rs); err != nil {
		return nil, fmt.Errorf("dpop: ECDSA signature: %w", err)
	}
	size := (pub.Curve.Params().BitSize + 7) / 8
	out := make([]byte, 2*size)
	rs.R.FillBytes(out[:size])
	rs.S.FillBytes(out[size:])
	return out, nil
}

// AccessTokenHash returns the ath of token: base64url(SHA-256(token)).
func AccessTokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
