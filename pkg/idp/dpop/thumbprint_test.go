package dpop

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"testing"
)

// RFC 7638 §3.1: the example RSA key and its thumbprint; members beyond
// the required ones (alg, kid) do not change it.
func TestThumbprint_RFC7638_3_1(t *testing.T) {
	const jwk = `{"kty":"RSA","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw","e":"AQAB","alg":"RS256","kid":"2011-04-29"}`
	got, err := Thumbprint(json.RawMessage(jwk))
	if err != nil || got != "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs" {
		t.Fatalf("Thumbprint = %q, %v", got, err)
	}
}

// RFC 8037 Appendix A.3: the thumbprint of the example Ed25519 key.
func TestThumbprint_RFC8037_A_3(t *testing.T) {
	const jwk = `{"crv":"Ed25519","kty":"OKP","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}`
	got, err := Thumbprint(json.RawMessage(jwk))
	if err != nil || got != "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" {
		t.Fatalf("Thumbprint = %q, %v", got, err)
	}
}

// RFC 9449 §6.1, Figure 9: the thumbprint of the key of the §4.1 example,
// written with its members in another order.
func TestThumbprint_RFC9449_6_1(t *testing.T) {
	const jwk = `{"y":"9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA","crv":"P-256","kty":"EC","x":"l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs"}`
	got, err := Thumbprint(json.RawMessage(jwk))
	if err != nil || got != rfc9449Figure9JKT {
		t.Fatalf("Thumbprint = %q, %v", got, err)
	}
}

// ThumbprintOfKey agrees with Thumbprint of the key's JWK, for each kind.
func TestThumbprintOfKey(t *testing.T) {
	for _, name := range []string{"P-256", "P-384", "P-521", "RSA", "Ed25519"} {
		pub := key(name).Public()
		jwk, err := canonicalJWK(pub)
		if err != nil {
			t.Fatal(err)
		}
		a, err1 := ThumbprintOfKey(pub)
		b, err2 := Thumbprint(jwk)
		if err1 != nil || err2 != nil || a != b || len(a) != 43 {
			t.Fatalf("%s: %q %v, %q %v", name, a, err1, b, err2)
		}
	}
	for _, pub := range []any{nil, "key", (*ecdsa.PublicKey)(nil), &rsa.PublicKey{}, ed25519.PublicKey{1}} {
		if _, err := ThumbprintOfKey(pub); err == nil {
			t.Errorf("ThumbprintOfKey(%T) did not fail", pub)
		}
	}
}

// Thumbprint refuses what Verify refuses: private keys and malformed or
// unsupported keys, as *Error.
func TestThumbprint_Refusals(t *testing.T) {
	for jwk, check := range map[string]string{
		`{"kty":"oct","k":"c2VjcmV0"}`: CheckPrivateKey,
		`{"crv":"Ed25519","kty":"OKP","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"}`: CheckPrivateKey,
		`{"crv":"Ed448","kty":"OKP","x":"AAAA"}`: CheckJWK,
		`{"kty":"RSA","n":"AQAB","e":"AQAB"}`:    CheckJWK,
		`{"kty":"EC"}`:                           CheckJWK,
		`[]`:                                     CheckJWK,
		`{"kty":"EC","kty":"EC"}`:                CheckJWK,
	} {
		_, err := Thumbprint(json.RawMessage(jwk))
		var e *Error
		if !errors.As(err, &e) || e.Check != check {
			t.Errorf("Thumbprint(%s) = %v, want a %s refusal", jwk, err, check)
		}
	}
}
