package dpop

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

// proofJWS is a DPoP proof split, decoded and read, not yet checked
// against a request or verified.
type proofJWS struct {
	alg, typ      string
	jwk           []byte     // the jwk header, raw JSON; nil when absent or key is set
	key           *publicJWK // the jwk's key, when the header was known
	headerSegment string     // the header as sent, base64url
	signingInput  string
	sig           []byte

	jti, htm, htu, ath, nonce string
	hasATH, hasNonce          bool
	iat                       float64
	hasIAT                    bool
}

// parseProof splits the compact JWS raw (RFC 7515 §7.1) and reads its
// header and claims. It is strict: exactly three non-empty canonical
// base64url parts, a header and a payload that are JSON objects naming no
// member twice (in any nested object either), the members read of the
// JSON type RFC 9449 §4.2 gives them, no crit (RFC 7515 §4.1.11: this
// verifier understands no extension). Names go through in (may be nil).
// A header found in known (may be nil) is taken from there, with its key,
// instead of being decoded again.
func parseProof(raw string, in *token.Interner, known *headerCache) (*proofJWS, *Error) {
	dot1 := strings.IndexByte(raw, '.')
	dot2 := strings.LastIndexByte(raw, '.')
	if dot1 <= 0 || dot2 == dot1 || dot2 == len(raw)-1 || strings.IndexByte(raw[dot1+1:dot2], '.') >= 0 {
		return nil, invalid(CheckSyntax, "not a compact JWS of three parts")
	}
	p := &proofJWS{headerSegment: raw[:dot1], signingInput: raw[:dot2]}
	var cached *cachedHeader
	if known != nil {
		cached = known.get(p.headerSegment)
	}
	// One copy of the proof to decode from, one buffer for the decoded
	// parts.
	src := []byte(raw)
	hlen := 0
	if cached == nil {
		hlen = b64.DecodedLen(dot1)
	}
	buf := make([]byte, hlen+b64.DecodedLen(dot2-dot1-1)+b64.DecodedLen(len(raw)-dot2-1))
	header, ok1 := []byte(nil), true
	if cached == nil {
		header, ok1 = decodeInto(buf, src[:dot1])
	}
	payload, ok2 := decodeInto(buf[len(header):], src[dot1+1:dot2])
	sig, ok3 := decodeInto(buf[len(header)+len(payload):], src[dot2+1:])
	if !ok1 || !ok2 || !ok3 {
		return nil, invalid(CheckSyntax, "a part is not canonical base64url")
	}
	p.sig = sig
	if cached != nil {
		p.alg, p.typ, p.key = cached.alg, cached.typ, cached.key
	} else if err := p.readHeader(header, in); err != nil {
		return nil, err
	}
	if err := p.readClaims(payload, in); err != nil {
		return nil, err
	}
	return p, nil
}

// decodeInto decodes the non-empty canonical base64url s into dst.
func decodeInto(dst, s []byte) ([]byte, bool) {
	if len(s) == 0 {
		return nil, false
	}
	for _, c := range s {
		if !b64url[c] {
			return nil, false
		}
	}
	n, err := b64.Decode(dst, s)
	return dst[:n:n], err == nil
}

// errMember carries a member's own refusal out of token.EachMember.
type errMember struct{ e *Error }

func (e errMember) Error() string { return e.e.Error() }

// jsonRefusal turns an error of token.EachMember into the proof's
// refusal: the member's own, or a syntax error naming the part.
func jsonRefusal(err error, part string) *Error {
	var m errMember
	if errors.As(err, &m) {
		return m.e
	}
	var dup *token.DuplicateError
	if errors.As(err, &dup) {
		return invalidErr(CheckSyntax, part+" names a member twice", err)
	}
	return invalidErr(CheckSyntax, part+" is not a JSON object", err)
}

func memberString(v []byte, in *token.Interner, check, name string) (string, error) {
	s, ok := token.String(in, v)
	if !ok {
		return "", errMember{invalid(check, name+" is not a string")}
	}
	return s, nil
}

func (p *proofJWS) readHeader(h []byte, in *token.Interner) *Error {
	err := token.EachMember(in, h, func(name string, v []byte) (err error) {
		switch name {
		case "typ":
			p.typ, err = memberString(v, in, CheckTyp, "typ")
		case "alg":
			p.alg, err = memberString(v, in, CheckAlg, "alg")
		case "jwk":
			if v[0] != '{' {
				return errMember{invalid(CheckJWK, "jwk is not a JSON object")}
			}
			p.jwk = v
		case "crit":
			return errMember{invalid(CheckSyntax, "crit header not understood")}
		}
		return err
	})
	if err != nil {
		return jsonRefusal(err, "header")
	}
	return nil
}

func (p *proofJWS) readClaims(c []byte, in *token.Interner) *Error {
	err := token.EachMember(in, c, func(name string, v []byte) (err error) {
		switch name {
		case "jti":
			p.jti, err = memberString(v, nil, CheckJTI, "jti")
		case "htm":
			p.htm, err = memberString(v, in, CheckHTM, "htm")
		case "htu":
			p.htu, err = memberString(v, in, CheckHTU, "htu")
		case "ath":
			p.ath, err = memberString(v, nil, CheckATH, "ath")
			p.hasATH = true
		case "nonce":
			p.nonce, err = memberString(v, nil, CheckNonce, "nonce")
			p.hasNonce = true
		case "iat":
			p.iat, p.hasIAT = jsonNumber(v)
			if !p.hasIAT {
				return errMember{invalid(CheckIAT, "iat is not a number")}
			}
		}
		return err
	})
	if err != nil {
		return jsonRefusal(err, "payload")
	}
	return nil
}

// jsonNumber decodes a JSON number (validated as JSON by EachMember); a
// string or anything else is not one. NaN cannot occur; ±Inf (1e999) is
// refused.
func jsonNumber(v []byte) (float64, bool) {
	if len(v) == 0 || !(v[0] == '-' || '0' <= v[0] && v[0] <= '9') {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return f, err == nil && !math.IsInf(f, 0)
}
