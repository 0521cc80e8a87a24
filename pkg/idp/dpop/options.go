package dpop

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// DefaultAlgorithms are the proof algorithms a Verifier accepts when
// Options.Algorithms is empty: every asymmetric JWS algorithm of RFC 7518
// and RFC 8037 that the standard library verifies.
var DefaultAlgorithms = []string{"ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA"}

// Defaults of Options.
const (
	// DefaultMaxAge is how old a proof may be. RFC 9449 §11.1 asks for a
	// short window: a proof is made for one request and sent at once, so a
	// minute covers slow networks and retries while keeping the replay
	// cache (which must remember each jti for the whole window) small.
	DefaultMaxAge = 60 * time.Second
	// DefaultLeeway is how far ahead of our clock a client's may be.
	DefaultLeeway = 5 * time.Second
	// DefaultNonceLifetime is how long a server nonce is accepted.
	DefaultNonceLifetime = 5 * time.Minute
	// DefaultMaxProofBytes bounds a proof: an RSA-4096 key and its
	// signature fit well within it.
	DefaultMaxProofBytes = 8 << 10
	// MinNonceSecret is the shortest Options.NonceSecret.
	MinNonceSecret = 32
	// MaxJTILength bounds jti: the replay cache keeps a hash of it, but a
	// megabyte-long jti would still be hashed.
	MaxJTILength = 256
)

// Options configure a Verifier. The zero value is usable: the defaults
// below, no server nonces, an in-memory replay cache.
type Options struct {
	// Algorithms are the accepted proof algorithms (JWS alg values);
	// empty: DefaultAlgorithms. "none" and symmetric (HS*) algorithms, or
	// any alg this package cannot verify, are errors of NewVerifier.
	Algorithms []string
	// MaxAge is how far in the past iat may be; zero: DefaultMaxAge.
	MaxAge time.Duration
	// Leeway is how far in the future iat may be; zero: DefaultLeeway.
	Leeway time.Duration
	// Nonce requires server nonces (RFC 9449 §9): a proof without a
	// current nonce is refused with use_dpop_nonce.
	Nonce bool
	// NonceSecret keys the stateless nonces; replicas sharing it accept
	// each other's nonces. Required when Nonce, at least MinNonceSecret
	// bytes.
	NonceSecret []byte
	// NonceLifetime is how long a nonce is accepted; zero:
	// DefaultNonceLifetime. Nonce returns a new value every lifetime/2.
	NonceLifetime time.Duration
	// Replay remembers the proofs seen; nil: a NewMemoryReplay of
	// DefaultReplaySize entries on the clock Now, which is right for one
	// replica only (replicas must share a cache, or a proof replayed to
	// another replica passes).
	Replay ReplayCache
	// MaxProofBytes bounds the DPoP header value; zero:
	// DefaultMaxProofBytes.
	MaxProofBytes int
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

// asymmetric lists the algorithms this package verifies.
var asymmetric = map[string]bool{
	"ES256": true, "ES384": true, "ES512": true,
	"RS256": true, "RS384": true, "RS512": true,
	"PS256": true, "PS384": true, "PS512": true,
	"EdDSA": true,
}

// withDefaults validates o and fills in its defaults.
func (o Options) withDefaults() (Options, error) {
	if len(o.Algorithms) == 0 {
		o.Algorithms = DefaultAlgorithms
	}
	o.Algorithms = slices.Clone(o.Algorithms)
	for _, a := range o.Algorithms {
		switch {
		case a == "none" || strings.HasPrefix(a, "HS"):
			return o, fmt.Errorf("dpop: algorithm %q is not asymmetric: a proof must be signed with a private key", a)
		case !asymmetric[a]:
			return o, fmt.Errorf("dpop: unsupported algorithm %q: want some of %s", a, strings.Join(DefaultAlgorithms, ", "))
		}
	}
	if o.MaxAge < 0 || o.Leeway < 0 || o.NonceLifetime < 0 || o.MaxProofBytes < 0 {
		return o, fmt.Errorf("dpop: negative max age, leeway, nonce lifetime or proof size")
	}
	if o.MaxAge == 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.Leeway == 0 {
		o.Leeway = DefaultLeeway
	}
	if o.NonceLifetime == 0 {
		o.NonceLifetime = DefaultNonceLifetime
	}
	if o.NonceLifetime < 2*time.Second {
		return o, fmt.Errorf("dpop: nonce lifetime %s is shorter than 2s", o.NonceLifetime)
	}
	if o.Nonce && len(o.NonceSecret) < MinNonceSecret {
		return o, fmt.Errorf("dpop: nonces need a secret of at least %d bytes, have %d", MinNonceSecret, len(o.NonceSecret))
	}
	o.NonceSecret = slices.Clone(o.NonceSecret)
	if o.MaxProofBytes == 0 {
		o.MaxProofBytes = DefaultMaxProofBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Replay == nil {
		o.Replay = newMemoryReplay(DefaultReplaySize, o.Now)
	}
	return o, nil
}

// ReplayCache remembers the proofs a Verifier has accepted.
type ReplayCache interface {
	// Claim records key until the time until and reports whether this is
	// its first use (false: seen before, and not yet expired). key is
	// opaque and of fixed length (a hash of the proof key's thumbprint and
	// the jti). An error means the cache could not answer: Verify refuses
	// the proof with an error wrapping ErrUnavailable.
	Claim(ctx context.Context, key string, until time.Time) (first bool, err error)
}
