package dpop

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

// Verifier checks DPoP proofs. It is safe for concurrent use.
type Verifier struct {
	o       Options
	algs    map[string]bool
	headers *headerCache
	nonce   *nonces // nil: no server nonces
	// names interns the member names and the recurring claim values
	// (htm, htu) of proofs, so that reading them allocates nothing.
	names *token.Interner
}

// NewVerifier validates o and returns a Verifier.
func NewVerifier(o Options) (*Verifier, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	v := &Verifier{o: o, algs: map[string]bool{}, headers: newHeaderCache(), names: token.NewInterner()}
	for _, a := range o.Algorithms {
		v.algs[a] = true
	}
	if o.Nonce {
		v.nonce = newNonces(o.NonceSecret, o.NonceLifetime)
	}
	return v, nil
}

// Algorithms returns the accepted algorithms, for the algs parameter of
// WWW-Authenticate (RFC 9449 §7.1).
func (v *Verifier) Algorithms() []string { return slices.Clone(v.o.Algorithms) }

// Request is what one HTTP request presents.
type Request struct {
	// Method is the method the client used.
	Method string
	// URL is the absolute URI the client used (scheme://host[:port]/path?query);
	// its query and fragment are ignored (RFC 9449 §4.2).
	URL string
	// Proofs are every value of the DPoP header; anything but exactly one
	// is refused.
	Proofs []string
	// AccessToken is the access token presented with the proof; "" for a
	// proof to a token endpoint, where ath is not required.
	AccessToken string
	// JKT, when not empty, is the thumbprint the proof's key must have
	// (the token's cnf.jkt). Verify then compares it before it touches
	// the replay cache, so that proofs by keys other than the token's
	// cannot fill it. Empty: the caller compares Proof.JKT itself.
	JKT string
	// ATH, when not empty, is AccessTokenHash(AccessToken), computed
	// before by a caller that sees the same token again and again (a
	// verified-token cache): Verify compares ath with it instead of
	// hashing the token on every request.
	ATH string
}

// Proof is a verified proof.
type Proof struct {
	JKT      string    // RFC 7638 SHA-256 thumbprint of the proof's key, base64url
	JTI      string    // the proof's jti
	IssuedAt time.Time // the proof's iat
	Alg      string    // the proof's alg
}

// Verify checks the proof of r against every check of RFC 9449 §4.3 but
// the comparison of the key with the access token's cnf.jkt, which it
// makes only when r.JKT is set. A refused proof is an *Error; a replay
// cache failure wraps ErrUnavailable.
func (v *Verifier) Verify(ctx context.Context, r Request) (Proof, error) {
	// §4.3 step 1: one DPoP header, one value (a comma-joined pair would
	// not parse as a JWS).
	if len(r.Proofs) != 1 {
		return Proof{}, invalid(CheckCount, "not exactly one DPoP header")
	}
	raw := r.Proofs[0]
	if len(raw) > v.o.MaxProofBytes {
		return Proof{}, invalid(CheckSize, "proof too large")
	}
	// Step 2: a well-formed JWT.
	p, perr := parseProof(raw, v.names, v.headers)
	if perr != nil {
		return Proof{}, perr
	}
	// Step 4: typ, exactly (RFC 9449 §4.2 names the value).
	if p.typ != "dpop+jwt" {
		return Proof{}, invalid(CheckTyp, "typ is not dpop+jwt")
	}
	// Step 5: an asymmetric algorithm this verifier allows.
	if !v.algs[p.alg] {
		if p.alg == "none" || strings.HasPrefix(p.alg, "HS") {
			return Proof{}, invalid(CheckAlg, "alg is not asymmetric")
		}
		return Proof{}, invalid(CheckAlg, "alg not allowed")
	}
	if p.key == nil && p.jwk == nil {
		return Proof{}, invalid(CheckJWK, "no jwk header")
	}
	// Step 3: the required claims, then steps 8 to 12 but the signature:
	// all cheaper than decoding the key.
	if err := v.checkClaims(p, r); err != nil {
		return Proof{}, err
	}
	// Step 7: a public key fit for alg (from a header whose signature
	// verified before, or parsed).
	key, cached := p.key, p.key != nil
	if !cached {
		if key, perr = parseJWK(p.jwk); perr != nil {
			return Proof{}, perr
		}
	}
	if !key.fitsAlg(p.alg) {
		return Proof{}, invalid(CheckJWK, "jwk does not fit alg")
	}
	// The cnf.jkt binding (step 12), when the caller gave it, before the
	// signature: proofs by any other key are refused for a hash.
	if r.JKT != "" && r.JKT != key.jkt {
		return Proof{}, invalid(CheckJKT, "proof key is not the key the access token is bound to")
	}
	// Step 6: the signature, with the jwk.
	if !verifySignature(p.alg, key.key, p.signingInput, p.sig) {
		return Proof{}, invalid(CheckSignature, "signature does not verify with jwk")
	}
	if !cached {
		v.headers.put(&cachedHeader{segment: p.headerSegment, alg: p.alg, typ: p.typ, key: key})
	}
	// Step 11 (§11.1): a jti seen once within the window, remembered
	// until no clock could accept the proof again.
	iat := numericTime(p.iat)
	first, err := v.o.Replay.Claim(ctx, replayKey(key.jkt, p.jti), iat.Add(v.o.MaxAge+v.o.Leeway))
	if err != nil {
		return Proof{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if !first {
		return Proof{}, invalid(CheckReplay, "proof replayed")
	}
	return Proof{JKT: key.jkt, JTI: p.jti, IssuedAt: iat, Alg: p.alg}, nil
}

// checkClaims checks the claims of p against r: presence and form (§4.3
// step 3), htm (step 8), htu (step 9), the nonce (step 10), iat (step
// 11) and ath (step 12).
func (v *Verifier) checkClaims(p *proofJWS, r Request) *Error {
	if p.jti == "" {
		return invalid(CheckJTI, "jti missing or empty")
	}
	if len(p.jti) > MaxJTILength {
		return invalid(CheckJTI, "jti too long")
	}
	if p.htm == "" {
		return invalid(CheckHTM, "htm missing")
	}
	if p.htm != r.Method {
		return invalid(CheckHTM, "htm is not the request method")
	}
	if p.htu == "" {
		return invalid(CheckHTU, "htu missing")
	}
	if !v.sameURI(p.htu, r.URL) {
		return invalid(CheckHTU, "htu is not the request URI")
	}
	if !p.hasIAT {
		return invalid(CheckIAT, "iat missing")
	}
	now := v.o.Now()
	iat := numericTime(p.iat)
	if iat.Before(now.Add(-v.o.MaxAge)) {
		return invalid(CheckIAT, "proof too old")
	}
	if iat.After(now.Add(v.o.Leeway)) {
		return invalid(CheckIAT, "proof issued in the future")
	}
	// ath binds the proof to the token it comes with. Without a token (a
	// proof to a token endpoint) there is nothing to compare an ath with,
	// and RFC 9449 §4.2 requires it only with a token: it is then
	// ignored, beyond its being a string.
	if r.AccessToken != "" {
		if !p.hasATH {
			return invalid(CheckATH, "ath missing")
		}
		if r.ATH != "" {
			if subtle.ConstantTimeCompare([]byte(r.ATH), []byte(p.ath)) != 1 {
				return invalid(CheckATH, "ath is not the hash of the access token")
			}
		} else if !athMatches(p.ath, r.AccessToken) {
			return invalid(CheckATH, "ath is not the hash of the access token")
		}
	}
	if v.nonce != nil {
		if !p.hasNonce {
			return useNonce("nonce missing")
		}
		if !v.nonce.valid(p.nonce, now, v.o.Leeway) {
			return useNonce("nonce not current")
		}
	}
	return nil
}

// sameURI compares htu with the request's URI after normalising both;
// a htu that is already the request's URI, as it mostly is, skips the
// work.
func (v *Verifier) sameURI(htu, uri string) bool {
	want, err := NormalizeHTU(uri)
	if err != nil {
		return false
	}
	if htu == want {
		return true
	}
	got, err := NormalizeHTU(htu)
	return err == nil && got == want
}

// athMatches compares ath with the hash of token without allocating.
func athMatches(ath, token string) bool {
	if len(ath) != 43 {
		return false
	}
	sum := sha256.Sum256([]byte(token))
	var enc [43]byte
	base64.RawURLEncoding.Encode(enc[:], sum[:])
	return subtle.ConstantTimeCompare(enc[:], []byte(ath)) == 1
}

// numericTime converts a NumericDate (seconds since the epoch, possibly
// fractional) to a time, clamped to what time.Time holds.
func numericTime(f float64) time.Time {
	const bound = 1 << 40 // some 35,000 years
	switch {
	case f > bound:
		f = bound
	case f < -bound:
		f = -bound
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9))
}

// Nonce returns a currently valid server nonce, for the DPoP-Nonce
// header; "" when Options.Nonce is off.
func (v *Verifier) Nonce() string {
	if v.nonce == nil {
		return ""
	}
	return v.nonce.current(v.o.Now())
}
