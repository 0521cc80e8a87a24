package dpop

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"math/big"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

// Bounds of RSA proof keys: below 2048 bits is weak (RFC 7518 §3.3 asks
// for at least 2048); above 8192 bits a proof would only cost the
// verifier more.
const (
	minRSABits = 2048
	maxRSABits = 8192
)

// publicJWK is a proof key parsed from its JWK: the key, what it may
// verify, and its RFC 7638 thumbprint.
type publicJWK struct {
	key crypto.PublicKey // *ecdsa.PublicKey, *rsa.PublicKey or ed25519.PublicKey
	// family is "EC-P-256", "EC-P-384", "EC-P-521", "RSA" or "OKP-Ed25519":
	// what fitsAlg compares with the proof's alg.
	family string
	alg    string // the JWK's own alg member, "" when absent
	jkt    string
}

// jwkMembers are the members of a JWK that parseJWK reads.
type jwkMembers struct {
	kty, crv, x, y, n, e, alg, use string
}

// privateMembers are the JWK members of private or symmetric keys (RFC
// 7518 §6.2.2, §6.3.2, §6.4; RFC 8037 §2): a proof carrying one has leaked
// its key, or is a symmetric key, and is refused (RFC 9449 §4.3 step 7).
func isPrivateMember(name string) bool {
	switch name {
	case "d", "p", "q", "dp", "dq", "qi", "oth", "k":
		return true
	}
	return false
}

// parseJWK parses the public JWK b (a JSON object validated by the caller
// or not). Every member it reads must be a string; a private member,
// an unknown kty or crv, a coordinate of the wrong length, an RSA modulus
// with leading zeros or outside [2048, 8192] bits are refused.
func parseJWK(b []byte) (*publicJWK, *Error) {
	var m jwkMembers
	var perr *Error
	err := token.EachMember(nil, b, func(name string, v []byte) error {
		if isPrivateMember(name) {
			perr = invalid(CheckPrivateKey, "jwk holds a private key member")
			return perr
		}
		var dst *string
		switch name {
		case "kty":
			dst = &m.kty
		case "crv":
			dst = &m.crv
		case "x":
			dst = &m.x
		case "y":
			dst = &m.y
		case "n":
			dst = &m.n
		case "e":
			dst = &m.e
		case "alg":
			dst = &m.alg
		case "use":
			dst = &m.use
		default:
			return nil
		}
		s, ok := token.String(nil, v)
		if !ok {
			perr = invalid(CheckJWK, "jwk member "+name+" is not a string")
			return perr
		}
		*dst = s
		return nil
	})
	if perr != nil {
		return nil, perr
	}
	if err != nil {
		return nil, invalidErr(CheckJWK, "jwk is not a JSON object with distinct member names", err)
	}
	return m.key()
}

func (m *jwkMembers) key() (*publicJWK, *Error) {
	if m.use != "" && m.use != "sig" {
		return nil, invalid(CheckJWK, "jwk use is not sig")
	}
	k := &publicJWK{alg: m.alg}
	var canonical []byte
	switch m.kty {
	case "EC":
		curve, size := ecCurve(m.crv)
		if curve == nil {
			return nil, invalid(CheckJWK, "unsupported EC curve")
		}
		x, ok1 := decodeB64(m.x)
		y, ok2 := decodeB64(m.y)
		if !ok1 || !ok2 || len(x) != size || len(y) != size || m.n != "" || m.e != "" {
			return nil, invalid(CheckJWK, "malformed EC key")
		}
		point := make([]byte, 0, 1+2*size)
		point = append(append(append(point, 4), x...), y...)
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, point)
		if err != nil {
			return nil, invalidErr(CheckJWK, "EC key is not a point of its curve", err)
		}
		k.key, k.family = pub, "EC-"+m.crv
		canonical = canonicalEC(m.crv, m.x, m.y)
	case "RSA":
		n, ok1 := decodeB64(m.n)
		e, ok2 := decodeB64(m.e)
		if !ok1 || !ok2 || n[0] == 0 || e[0] == 0 || len(e) > 4 || m.crv != "" || m.x != "" || m.y != "" {
			return nil, invalid(CheckJWK, "malformed RSA key")
		}
		bits := (len(n)-1)*8 + bitLen8(n[0])
		if bits < minRSABits || bits > maxRSABits {
			return nil, invalid(CheckJWK, "RSA key size outside 2048 to 8192 bits")
		}
		var ev int
		for _, c := range e {
			ev = ev<<8 | int(c)
		}
		if ev < 3 || ev&1 == 0 || ev > 1<<31-1 {
			return nil, invalid(CheckJWK, "unsupported RSA exponent")
		}
		k.key, k.family = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: ev}, "RSA"
		canonical = canonicalRSA(m.e, m.n)
	case "OKP":
		x, ok := decodeB64(m.x)
		if m.crv != "Ed25519" {
			return nil, invalid(CheckJWK, "unsupported OKP curve")
		}
		if !ok || len(x) != ed25519.PublicKeySize || m.y != "" || m.n != "" || m.e != "" {
			return nil, invalid(CheckJWK, "malformed Ed25519 key")
		}
		k.key, k.family = ed25519.PublicKey(x), "OKP-Ed25519"
		canonical = canonicalOKP(m.crv, m.x)
	case "":
		return nil, invalid(CheckJWK, "jwk has no kty")
	default:
		return nil, invalid(CheckJWK, "unsupported jwk kty")
	}
	k.jkt = thumbprintOf(canonical)
	return k, nil
}

func ecCurve(crv string) (elliptic.Curve, int) {
	switch crv {
	case "P-256":
		return elliptic.P256(), 32
	case "P-384":
		return elliptic.P384(), 48
	case "P-521":
		return elliptic.P521(), 66
	}
	return nil, 0
}

func bitLen8(c byte) int {
	n := 0
	for ; c != 0; c >>= 1 {
		n++
	}
	return n
}

// fitsAlg reports whether the key may verify alg (RFC 7518 §3.1; RFC 8037
// §3.1): ES256 only with P-256, and so on; the JWK's own alg, when given,
// must be alg too.
func (k *publicJWK) fitsAlg(alg string) bool {
	if k.alg != "" && k.alg != alg {
		return false
	}
	switch alg {
	case "ES256":
		return k.family == "EC-P-256"
	case "ES384":
		return k.family == "EC-P-384"
	case "ES512":
		return k.family == "EC-P-521"
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
		return k.family == "RSA"
	case "EdDSA":
		return k.family == "OKP-Ed25519"
	}
	return false
}

// b64 is base64url without padding, strict: zero trailing bits, so each
// value has one encoding.
var b64 = base64.RawURLEncoding.Strict()

// b64url marks the base64url alphabet (the decoder would skip \r and \n).
var b64url = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	t['-'], t['_'] = true, true
	return t
}()

func isB64(s string) bool {
	for i := 0; i < len(s); i++ {
		if !b64url[s[i]] {
			return false
		}
	}
	return true
}

// decodeB64 decodes a non-empty canonical base64url string.
func decodeB64(s string) ([]byte, bool) {
	if s == "" || !isB64(s) {
		return nil, false
	}
	b, err := b64.DecodeString(s)
	return b, err == nil && len(b) > 0
}

// The RFC 7638 §3.2 inputs: the required members only, in lexicographic
// order, no white space. The values are canonical base64url or fixed
// names, so nothing needs escaping.
func canonicalEC(crv, x, y string) []byte {
	return []byte(`{"crv":"` + crv + `","kty":"EC","x":"` + x + `","y":"` + y + `"}`)
}

func canonicalRSA(e, n string) []byte {
	return []byte(`{"e":"` + e + `","kty":"RSA","n":"` + n + `"}`)
}

func canonicalOKP(crv, x string) []byte {
	return []byte(`{"crv":"` + crv + `","kty":"OKP","x":"` + x + `"}`)
}

func thumbprintOf(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
