package dpop

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"testing"
)

// RFC 9449 §4.3 step 7: "the jwk JOSE Header Parameter does not contain
// a private key".
func TestVerify_RFC9449_4_3_7_PublicKeyOnly(t *testing.T) {
	v := newTestVerifier(t, Options{})
	ecD, err := key("P-256").(*ecdsa.PrivateKey).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	rk := key("RSA").(*rsa.PrivateKey)
	enc := func(b *big.Int) string { return base64.RawURLEncoding.EncodeToString(b.Bytes()) }
	for name, c := range map[string]struct {
		keyName, alg string
		extra        map[string]string
	}{
		"EC d":   {"P-256", "ES256", map[string]string{"d": base64.RawURLEncoding.EncodeToString(ecD)}},
		"RSA d":  {"RSA", "RS256", map[string]string{"d": enc(rk.D)}},
		"RSA p":  {"RSA", "RS256", map[string]string{"p": enc(rk.Primes[0])}},
		"RSA qi": {"RSA", "RS256", map[string]string{"qi": enc(rk.Precomputed.Qinv)}},
		"oct k":  {"P-256", "ES256", map[string]string{"k": "c2VjcmV0"}},
		"OKP d":  {"Ed25519", "EdDSA", map[string]string{"d": "AAAA"}},
	} {
		t.Run(name, func(t *testing.T) {
			p := defaultParts().withKey(c.keyName, c.alg)
			var m map[string]any
			_ = json.Unmarshal(p.header["jwk"].(json.RawMessage), &m)
			for k, v := range c.extra {
				m[k] = v
			}
			p.header["jwk"] = m
			_, err := v.Verify(ctx, testRequest(p.encode(t)))
			wantRefused(t, err, CodeInvalidProof, CheckPrivateKey)
		})
	}
}

// RFC 9449 §4.3 step 7 and §4.2: the jwk header holds a well-formed public
// key of the kind alg names (RFC 7518 §3.4: ES256 on P-256 and so on;
// §3.3 and §3.5: RSA of at least 2048 bits; RFC 8037 §3.1: EdDSA on
// Ed25519).
func TestVerify_RFC9449_4_3_7_JWK(t *testing.T) {
	v := newTestVerifier(t, Options{})
	ecJWK := func() map[string]any {
		var m map[string]any
		jwk, _ := canonicalJWK(key("P-256").Public())
		_ = json.Unmarshal(jwk, &m)
		return m
	}
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	weakJWK, _ := canonicalJWK(weak.Public())
	for name, jwk := range map[string]any{
		"missing":        nil,
		"string":         "key",
		"no kty":         func() any { m := ecJWK(); delete(m, "kty"); return m }(),
		"kty oct":        func() any { m := ecJWK(); m["kty"] = "oct"; return m }(),
		"kty RSA":        func() any { m := ecJWK(); m["kty"] = "RSA"; return m }(),
		"crv P-384":      func() any { m := ecJWK(); m["crv"] = "P-384"; return m }(),
		"crv secp256k1":  func() any { m := ecJWK(); m["crv"] = "secp256k1"; return m }(),
		"short x":        func() any { m := ecJWK(); m["x"] = m["x"].(string)[2:]; return m }(),
		"not on curve":   func() any { m := ecJWK(); m["y"] = m["x"]; return m }(),
		"padded x":       func() any { m := ecJWK(); m["x"] = m["x"].(string) + "="; return m }(),
		"numeric x":      func() any { m := ecJWK(); m["x"] = 1; return m }(),
		"alg ES384":      func() any { m := ecJWK(); m["alg"] = "ES384"; return m }(),
		"use enc":        func() any { m := ecJWK(); m["use"] = "enc"; return m }(),
		"RSA-1024 (alg)": json.RawMessage(weakJWK),
	} {
		t.Run(name, func(t *testing.T) {
			p := defaultParts()
			if jwk == nil {
				delete(p.header, "jwk")
			} else {
				p.header["jwk"] = jwk
			}
			if name == "RSA-1024 (alg)" {
				p.key, p.alg, p.header["alg"] = weak, "RS256", "RS256"
			}
			_, err := v.Verify(ctx, testRequest(p.encode(t)))
			wantRefused(t, err, CodeInvalidProof, CheckJWK)
		})
	}
	t.Run("alg of another key type", func(t *testing.T) {
		p := defaultParts().withKey("RSA", "RS256")
		p.header["alg"] = "ES256" // an RSA jwk under ES256
		_, err := v.Verify(ctx, testRequest(p.encode(t)))
		wantRefused(t, err, CodeInvalidProof, CheckJWK)
	})
}

// A key from a cached header is still checked against the proof's alg.
func TestVerify_CachedKeyStillFitsAlg(t *testing.T) {
	v := newTestVerifier(t, Options{})
	if _, err := v.Verify(ctx, testRequest(defaultParts().encode(t))); err != nil {
		t.Fatal(err)
	}
	p := defaultParts()
	p.header["alg"] = "ES384"
	p.claims["jti"] = "jti-2"
	_, err := v.Verify(ctx, testRequest(p.encode(t)))
	wantRefused(t, err, CodeInvalidProof, CheckJWK)
}
