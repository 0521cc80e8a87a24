package dpop

import (
	"context"
	"errors"
	"slices"
	"time"
)

// Verifier checks DPoP proofs. It is safe for concurrent use.
type Verifier struct {
	o     Options
	algs  map[string]bool
	keys  *keyCache
	nonce *nonces
}

// NewVerifier validates o and returns a Verifier.
func NewVerifier(o Options) (*Verifier, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	v := &Verifier{o: o, algs: map[string]bool{}, keys: newKeyCache()}
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
	return Proof{}, errors.New("dpop: not implemented")
}

// Nonce returns a currently valid server nonce, for the DPoP-Nonce
// header; "" when Options.Nonce is off.
func (v *Verifier) Nonce() string {
	if v.nonce == nil {
		return ""
	}
	return v.nonce.current(v.o.Now())
}
