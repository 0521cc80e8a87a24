package token

import (
	"bytes"
	"encoding/base64"
	"strings"
)

// JWS is a compact JWS split and decoded: the JOSE header fields the
// verifier reads, the signing input, the payload and the signature.
type JWS struct {
	Alg, Kid, Typ string
	HasKID        bool   // the header names a kid (then Kid is not empty)
	SigningInput  string // header.payload, as signed
	Payload       []byte
	Sig           []byte
}

// b64 is base64url without padding, strict: trailing bits must be zero,
// so that every token has exactly one string form (a cache or deny-list
// keyed on the string cannot be dodged by re-encoding).
var b64 = base64.RawURLEncoding.Strict()

// decodeSegment decodes the canonical base64url segment src into dst
// (DecodedLen(len(src)) bytes): only the alphabet (no padding, no line
// breaks), zero trailing bits. The strict decoder refuses every byte
// outside the alphabet but '\r' and '\n', which it skips: those two are
// refused here, with IndexByte (a per-byte alphabet check cost a cache
// miss about 9,000 instructions on a 1 KiB token, bench/README.md).
func decodeSegment(dst, src []byte) ([]byte, bool) {
	if len(src) == 0 || bytes.IndexByte(src, '\n') >= 0 || bytes.IndexByte(src, '\r') >= 0 {
		return nil, false
	}
	n, err := b64.Decode(dst, src)
	if err != nil {
		return nil, false
	}
	return dst[:n:n], true
}

// ParseJWS splits and decodes a compact JWS. The header must be a JSON
// object naming each parameter once; crit, unknown to this verifier, is
// refused (RFC 7515 §4.1.11); alg, kid and typ must be strings.
func ParseJWS(raw string) (*JWS, error) {
	dot1 := strings.IndexByte(raw, '.')
	dot2 := strings.LastIndexByte(raw, '.')
	if dot1 <= 0 || dot2 == dot1 || strings.IndexByte(raw[dot1+1:dot2], '.') >= 0 {
		return nil, Invalid("malformed token", nil)
	}
	// One copy of the token; the payload in a buffer of its own (it is
	// kept, as idp.TokenPayload.Raw, for as long as the token is cached), the
	// header and the signature in another (dropped after the check).
	src := []byte(raw)
	payload, ok2 := decodeSegment(make([]byte, b64.DecodedLen(dot2-dot1-1)), src[dot1+1:dot2])
	scratch := make([]byte, b64.DecodedLen(dot1)+b64.DecodedLen(len(raw)-dot2-1))
	header, ok1 := decodeSegment(scratch, src[:dot1])
	sig, ok3 := decodeSegment(scratch[len(header):], src[dot2+1:])
	if !ok1 || !ok2 || !ok3 {
		return nil, Invalid("malformed token", nil)
	}
	t := &JWS{SigningInput: raw[:dot2], Payload: payload, Sig: sig}
	err := EachMember(nil, header, func(name string, v []byte) error {
		var dst *string // each once: EachMember refuses a name twice
		switch name {
		case "alg":
			dst = &t.Alg
		case "kid":
			dst = &t.Kid
			t.HasKID = true
		case "typ":
			dst = &t.Typ
		case "crit":
			return Invalid("unsupported critical header", nil)
		default:
			return nil
		}
		s, ok := String(nil, v)
		if !ok {
			return Invalid("malformed "+name+" header", nil)
		}
		*dst = s
		return nil
	})
	if err != nil {
		if reason, ok := duplicateReason(err, "header parameter"); ok {
			return nil, Invalid(reason, nil)
		}
		if err == errJSON {
			return nil, Invalid("malformed token", err)
		}
		return nil, err
	}
	if t.Alg == "" {
		return nil, Invalid("missing alg header", nil)
	}
	if t.HasKID && t.Kid == "" {
		return nil, Invalid("malformed kid header", nil)
	}
	return t, nil
}

// isATJWT reports whether the header declares an RFC 9068 JWT access
// token.
func (t *JWS) IsATJWT() bool {
	return strings.EqualFold(strings.TrimPrefix(strings.ToLower(t.Typ), "application/"), "at+jwt")
}
