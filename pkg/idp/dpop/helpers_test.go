package dpop

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"
)

// testNow is the fixed clock of the tests.
var testNow = time.Unix(1_800_000_000, 0)

const (
	testURL   = "https://api.example.com/orders"
	testToken = "eyJhbGciOiJFUzI1NiJ9.eyJjbmYiOnt9fQ.c2ln"
)

// Keys are generated once: RSA generation is slow.
var testKeys = sync.OnceValue(func() map[string]crypto.Signer {
	ec256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ec384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	ec521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	rsa2048, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	return map[string]crypto.Signer{
		"P-256": ec256, "P-384": ec384, "P-521": ec521, "RSA": rsa2048, "Ed25519": ed, "other P-256": other,
	}
})

func key(name string) crypto.Signer { return testKeys()[name] }

// newTestVerifier returns a Verifier on the test clock, with o's other
// fields.
func newTestVerifier(t testing.TB, o Options) *Verifier {
	t.Helper()
	if o.Now == nil {
		o.Now = func() time.Time { return testNow }
	}
	v, err := NewVerifier(o)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// testRequest is the request the default proof is made for.
func testRequest(proof string) Request {
	return Request{Method: "GET", URL: testURL, Proofs: []string{proof}, AccessToken: testToken}
}

// proofParts are a proof's header and claims, to change one at a time.
type proofParts struct {
	key    crypto.Signer
	alg    string // signing algorithm (and the header's, unless header sets alg)
	header map[string]any
	claims map[string]any
}

// defaultParts are a valid ES256 proof for testRequest.
func defaultParts() *proofParts {
	k := key("P-256")
	jwk, _ := canonicalJWK(k.Public())
	return &proofParts{
		key: k, alg: "ES256",
		header: map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": json.RawMessage(jwk)},
		claims: map[string]any{
			"jti": "jti-1", "htm": "GET", "htu": testURL, "iat": testNow.Unix(),
			"ath": AccessTokenHash(testToken),
		},
	}
}

// withKey makes the proof with the key name, alg and that key's jwk.
func (p *proofParts) withKey(name, alg string) *proofParts {
	p.key, p.alg = key(name), alg
	jwk, _ := canonicalJWK(p.key.Public())
	p.header["alg"], p.header["jwk"] = alg, json.RawMessage(jwk)
	return p
}

func (p *proofParts) encode(t testing.TB) string {
	t.Helper()
	h, err := json.Marshal(p.header)
	if err != nil {
		t.Fatal(err)
	}
	c, err := json.Marshal(p.claims)
	if err != nil {
		t.Fatal(err)
	}
	return signRaw(t, p.key, p.alg, h, c)
}

// signRaw signs any header and payload, well-formed or not.
func signRaw(t testing.TB, k crypto.Signer, alg string, header, payload []byte) string {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	input := enc(header) + "." + enc(payload)
	sig, err := sign(k, alg, input)
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + enc(sig)
}

// wantRefused asserts err is an *Error with code and check.
func wantRefused(t *testing.T, err error, code, check string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want an *Error %s/%s", err, code, check)
	}
	if e.Code != code || e.Check != check {
		t.Fatalf("refused with %s/%s (%s), want %s/%s", e.Code, e.Check, e.Reason, code, check)
	}
}

// countingReplay is a ReplayCache that records its calls.
type countingReplay struct {
	mu     sync.Mutex
	calls  int
	until  time.Time
	err    error
	claims map[string]bool
}

func (c *countingReplay) Claim(_ context.Context, key string, until time.Time) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	c.until = until
	if c.err != nil {
		return false, c.err
	}
	if c.claims == nil {
		c.claims = map[string]bool{}
	}
	if c.claims[key] {
		return false, nil
	}
	c.claims[key] = true
	return true, nil
}
