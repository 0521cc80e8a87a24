package dpop

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"
)

// alwaysFirst is a ReplayCache that accepts everything, so that a
// benchmark can present the same few proofs again and again.
type alwaysFirst struct{}

func (alwaysFirst) Claim(context.Context, string, time.Time) (bool, error) { return true, nil }

var benchAlgs = []struct{ key, alg string }{{"P-256", "ES256"}, {"RSA", "RS256"}, {"RSA", "PS256"}, {"Ed25519", "EdDSA"}}

// benchProofs are n proofs by the key for testRequest, distinct jtis.
func benchProofs(b *testing.B, keyName, alg string, n int) []string {
	proofs := make([]string, n)
	for i := range proofs {
		p := defaultParts().withKey(keyName, alg)
		p.claims["jti"] = "jti-" + strconv.Itoa(i)
		proofs[i] = p.encode(b)
	}
	return proofs
}

// BenchmarkVerify is the whole of Verify for a client whose header (and
// key) is cached, its second proof on: parse, every check, the signature,
// and a replay cache that says "first" (alwaysFirst; the memory cache's
// own cost is BenchmarkVerify/ES256-memory-replay and
// BenchmarkMemoryReplay).
func BenchmarkVerify(b *testing.B) {
	for _, c := range benchAlgs {
		b.Run(c.alg, func(b *testing.B) {
			proofs := benchProofs(b, c.key, c.alg, 64)
			v := newTestVerifier(b, Options{Replay: alwaysFirst{}})
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := v.Verify(ctx, testRequest(proofs[i%len(proofs)])); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("ES256-memory-replay", func(b *testing.B) {
		// Distinct proofs, one each, into the default memory cache; made in
		// batches outside the timer.
		v := newTestVerifier(b, Options{})
		b.ReportAllocs()
		var proofs []string
		n := 0
		for b.Loop() {
			if len(proofs) == 0 {
				b.StopTimer()
				proofs = benchProofs(b, "P-256", "ES256", 1024)
				for i := range proofs {
					p := defaultParts()
					p.claims["jti"] = "j" + strconv.Itoa(n)
					n++
					proofs[i] = p.encode(b)
				}
				b.StartTimer()
			}
			if _, err := v.Verify(ctx, testRequest(proofs[0])); err != nil {
				b.Fatal(err)
			}
			proofs = proofs[1:]
		}
	})
	b.Run("ES256-invalid-signature", func(b *testing.B) {
		// A forged proof: everything but the signature checks out.
		parts := strings.Split(benchProofs(b, "P-256", "ES256", 1)[0], ".")
		forged := parts[0] + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString(make([]byte, 64))
		v := newTestVerifier(b, Options{Replay: alwaysFirst{}})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.Verify(ctx, testRequest(forged)); err == nil {
				b.Fatal("verified")
			}
		}
	})
	b.Run("ES256-bad-htm", func(b *testing.B) {
		// Refused before the signature: what a flood of junk costs.
		proof := benchProofs(b, "P-256", "ES256", 1)[0]
		v := newTestVerifier(b, Options{Replay: alwaysFirst{}})
		r := testRequest(proof)
		r.Method = "POST"
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.Verify(ctx, r); err == nil {
				b.Fatal("verified")
			}
		}
	})
}

// BenchmarkSignature is the floor of BenchmarkVerify: the standard
// library's verification of the same signature (hash included), with
// the key already parsed.
func BenchmarkSignature(b *testing.B) {
	for _, c := range benchAlgs {
		b.Run(c.alg, func(b *testing.B) {
			proof := benchProofs(b, c.key, c.alg, 1)[0]
			dot := strings.LastIndexByte(proof, '.')
			input := proof[:dot]
			sig, _ := base64.RawURLEncoding.DecodeString(proof[dot+1:])
			pub := key(c.key).Public()
			h := algHash(c.alg)
			var der []byte
			if c.alg == "ES256" {
				der, _ = ecdsaDER(nil, sig[:32], sig[32:])
			}
			b.ReportAllocs()
			for b.Loop() {
				var ok bool
				switch c.alg {
				case "ES256":
					d := h.New()
					d.Write([]byte(input))
					ok = ecdsa.VerifyASN1(pub.(*ecdsa.PublicKey), d.Sum(nil), der)
				case "RS256":
					d := h.New()
					d.Write([]byte(input))
					ok = rsa.VerifyPKCS1v15(pub.(*rsa.PublicKey), crypto.SHA256, d.Sum(nil), sig) == nil
				case "PS256":
					d := h.New()
					d.Write([]byte(input))
					ok = rsa.VerifyPSS(pub.(*rsa.PublicKey), crypto.SHA256, d.Sum(nil), sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
				case "EdDSA":
					ok = ed25519.Verify(pub.(ed25519.PublicKey), []byte(input), sig)
				}
				if !ok {
					b.Fatal("signature")
				}
			}
		})
	}
}

// BenchmarkParseJWK is part of what the header cache saves on each
// proof of a known client.
func BenchmarkParseJWK(b *testing.B) {
	for _, c := range benchAlgs[:2] {
		b.Run(c.key, func(b *testing.B) {
			jwk, _ := canonicalJWK(key(c.key).Public())
			b.ReportAllocs()
			for b.Loop() {
				if _, err := parseJWK(jwk); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMemoryReplay is one Claim of a new key in a cache that holds
// DefaultReplaySize/2 keys.
func BenchmarkMemoryReplay(b *testing.B) {
	m := newMemoryReplay(DefaultReplaySize, func() time.Time { return testNow })
	keys := make([]string, DefaultReplaySize)
	for i := range keys {
		keys[i] = replayKey("jkt", strconv.Itoa(i))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == len(keys) {
			b.StopTimer()
			m = newMemoryReplay(DefaultReplaySize, func() time.Time { return testNow })
			i = 0
			b.StartTimer()
		}
		_, _ = m.Claim(ctx, keys[i], testNow.Add(time.Minute))
		i++
	}
}
