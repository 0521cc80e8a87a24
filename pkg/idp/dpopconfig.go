package idp

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"strings"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/fielderr"
	"github.com/idp-proxy/idp-proxy/pkg/idp/dpop"
)

// DPoPConfig says how requests prove possession of the key their token is
// bound to (RFC 9449). Whatever the mode, a token bound to a key (cnf) is
// accepted only with its proof (see binding.go's rules).
type DPoPConfig struct {
	// Mode is dpop.Off (bearer tokens only: the DPoP scheme and DPoP-bound
	// tokens are refused), dpop.Allowed (bearer tokens, and DPoP-bound
	// tokens under the DPoP scheme with a valid proof) or dpop.Required
	// (only DPoP-bound tokens with a valid proof). [Off]
	Mode dpop.Mode
	// Options configure the proofs' verification: Algorithms, MaxAge,
	// Leeway, Nonce, NonceLifetime, Replay, MaxProofBytes are the dpop
	// package's, with its defaults for zero values. Now defaults to
	// Config.Now; NonceSecret, when nil, is derived from
	// Config.SessionSecret when that is set (so that replicas sharing it
	// accept each other's nonces), else dpop's (random per process);
	// Replay, when nil, is an in-memory cache of dpop.DefaultReplaySize
	// proofs (right for one replica: give several a shared cache, such
	// as redisstore.Store's DPoPReplay).
	dpop.Options
	// TrustForwarded takes the scheme of the URL a proof must name (htu)
	// from X-Forwarded-Proto (one value, http or https); only behind a
	// proxy that sets it. The host is always Host, the one rules match.
	// [false: the scheme from the TLS connection]
	TrustForwarded bool
}

// dpopOptions returns the verifier's options for c.
func (c Config) dpopOptions() dpop.Options {
	o := c.DPoP.Options
	if o.Now == nil {
		o.Now = c.Now
	}
	if o.NonceSecret == nil && len(c.SessionSecret) > 0 {
		o.NonceSecret = nonceSecretFrom(c.SessionSecret)
	}
	return o
}

// nonceSecretFrom derives the DPoP nonces' key from the session secret:
// never the secret itself, which seals cookies.
func nonceSecretFrom(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("idp-proxy DPoP-Nonce v1"))
	return m.Sum(nil)
}

// newDPoPVerifier builds the plugin's proof verifier (also when the mode
// is Off: pkg/proxy's rules may turn DPoP on per route).
func newDPoPVerifier(c Config) (*dpop.Verifier, error) {
	return dpop.NewVerifier(c.dpopOptions())
}

// validateDPoP reports a DPoP option the dpop package refuses.
func (c Config) validateDPoP(ps *problems) {
	if c.DPoP.Mode > dpop.Required {
		ps.bad("DPoP.Mode", "%s: want off, allowed or required", fielderr.F("DPoP.Mode"))
	}
	o := c.dpopOptions()
	if o.Nonce && o.NonceSecret == nil {
		ps.bad("DPoP.Nonce", "%s needs a secret shared by the replicas: set %s (the nonces' key is derived from it)",
			fielderr.F("DPoP.Nonce"), fielderr.F("SessionSecret"))
		return
	}
	o.Replay = noReplay{}
	if _, err := dpop.NewVerifier(o); err != nil {
		ps.bad("DPoP", "%s: %v", fielderr.F("DPoP"), err)
	}
}

// algsList is the algs parameter of the DPoP challenge.
func algsList(v *dpop.Verifier) string { return strings.Join(v.Algorithms(), " ") }

// noReplay stands in for the replay cache while validating options (it is
// never used to verify a proof).
type noReplay struct{}

func (noReplay) Claim(context.Context, string, time.Time) (bool, error) { return true, nil }
