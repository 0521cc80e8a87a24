package idp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

// verifyWith with the cache's digest gives golang-jwt's answer for every
// SHA-256 algorithm: the signature is accepted, and refused when it, the
// signing input or the key differ.
func TestVerifyWithDigestAgreesWithGolangJWT(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	otherRSA, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	otherEC, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method      jwt.SigningMethod
		sign        any
		pub, other  any
		wrongFamily any
	}{
		{jwt.SigningMethodRS256, rsaKey, &rsaKey.PublicKey, &otherRSA.PublicKey, &ecKey.PublicKey},
		{jwt.SigningMethodPS256, rsaKey, &rsaKey.PublicKey, &otherRSA.PublicKey, &ecKey.PublicKey},
		{jwt.SigningMethodES256, ecKey, &ecKey.PublicKey, &otherEC.PublicKey, &rsaKey.PublicKey},
		{jwt.SigningMethodRS384, rsaKey, &rsaKey.PublicKey, &otherRSA.PublicKey, &ecKey.PublicKey}, // no digest path: method.Verify
	} {
		t.Run(tc.method.Alg(), func(t *testing.T) {
			raw, err := jwt.NewWithClaims(tc.method, jwt.MapClaims{"sub": "u"}).SignedString(tc.sign)
			if err != nil {
				t.Fatal(err)
			}
			jws, err := token.ParseJWS(raw)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256([]byte(jws.SigningInput))
			badSig := *jws
			badSig.Sig = append([]byte(nil), jws.Sig...)
			badSig.Sig[len(badSig.Sig)/2] ^= 1
			shortSig := *jws
			shortSig.Sig = jws.Sig[:len(jws.Sig)-1]
			otherSum := sha256.Sum256([]byte(jws.SigningInput + "x"))
			for _, c := range []struct {
				name string
				t    *token.JWS
				key  any
				sum  *[32]byte
				ok   bool
			}{
				{"valid", jws, tc.pub, &sum, true},
				{"valid without digest", jws, tc.pub, nil, true},
				{"signature changed", &badSig, tc.pub, &sum, false},
				{"signature shortened", &shortSig, tc.pub, &sum, false},
				{"another signing input", jws, tc.pub, &otherSum, tc.method.Alg() == "RS384"},
				{"another key", jws, tc.other, &sum, false},
				{"a key of another family", jws, tc.wrongFamily, &sum, false},
			} {
				got := verifyWith(tc.method, c.t, c.key, c.sum)
				if (got == nil) != c.ok {
					t.Errorf("%s: verifyWith = %v, want accepted %v", c.name, got, c.ok)
				}
				// golang-jwt hashes the signing input itself: it agrees
				// wherever the digest is the signing input's.
				if want := tc.method.Verify(c.t.SigningInput, c.t.Sig, c.key); c.sum != &otherSum && (want == nil) != (got == nil) {
					t.Errorf("%s: verifyWith = %v, golang-jwt = %v", c.name, got, want)
				}
			}
		})
	}
}

// The shards hold a token under the digest of its signing input and its
// signature: a token with the same header and payload but another
// signature is not served from them, and caching it replaces the entry.
func TestTokenCacheNeedsTheSameSignature(t *testing.T) {
	c := newTokenCache(100)
	now := time.Now()
	id := &Identity{User: &User{Sub: "u"}, Payload: &TokenPayload{Subject: "u", Raw: []byte(`{"sub":"u"}`)}, Raw: "h.p.sig1"}
	putToken(c, "h.p.sig1", id, now.Add(time.Minute), now, 0)
	c.hot.reset()
	for _, raw := range []string{"h.p.sig2", "h.p.sig", "h.p.sig1x", "h.p.", "h.p", "h.psig1", "h.p.sig1.", "h.p.s.ig1"} {
		if _, p, _, _ := getToken(c, raw, now, 0); p != nil {
			t.Errorf("%q served as h.p.sig1", raw)
		}
	}
	if _, p, _, k := getToken(c, "h.p.sig1", now, 0); p == nil || k.signingSum() == nil || *k.signingSum() != sha256.Sum256([]byte("h.p")) {
		t.Fatal("h.p.sig1 not served, or its digest is not that of its signing input")
	}
	id2 := &Identity{User: &User{Sub: "u"}, Payload: &TokenPayload{Subject: "u", Raw: []byte(`{"sub":"u"}`)}, Raw: "h.p.sig2"}
	putToken(c, "h.p.sig2", id2, now.Add(time.Minute), now, 0)
	c.hot.reset()
	if _, p, _, _ := getToken(c, "h.p.sig2", now, 0); p == nil {
		t.Fatal("the re-signed token is not cached")
	}
	if _, p, _, _ := getToken(c, "h.p.sig1", now, 0); p != nil {
		t.Fatal("the replaced signature is still served")
	}
	if _, _, _, k := getToken(c, "nodot", now, 0); k.signingSum() != nil {
		t.Fatal("a digest for a string without a signing input")
	}
}
