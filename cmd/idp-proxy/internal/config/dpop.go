package config

import (
	"slices"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/dpop"
)

// DPoP is the idp.dpop section: proof of possession (RFC 9449) for
// DPoP-bound tokens. routes[].dpop sets the mode of one rule.
type DPoP struct {
	// Mode is off (bearer tokens only; the DPoP scheme and DPoP-bound
	// tokens are refused), allowed (bearer tokens, and DPoP-bound tokens
	// under the DPoP scheme with a valid proof) or required (only
	// DPoP-bound tokens with a valid proof), for every rule without a
	// dpop of its own. A token bound to a key or a certificate (cnf) is
	// checked in every mode. ["off"]
	Mode string `mapstructure:"mode"`
	// Algorithms are the proof algorithms accepted (asymmetric only).
	// [ES256 ES384 ES512 RS256 RS384 RS512 PS256 PS384 PS512 EdDSA]
	Algorithms []string `mapstructure:"algorithms"`
	// MaxAge is how old a proof may be (its iat in the past). [60s]
	MaxAge time.Duration `mapstructure:"max_age"`
	// Leeway is how far in the future a proof's iat may be. [5s]
	Leeway time.Duration `mapstructure:"leeway"`
	// Nonce requires server nonces (RFC 9449 §9): a proof without a
	// current one is answered 401 use_dpop_nonce with a DPoP-Nonce
	// header. The nonces are keyed by a secret derived from
	// idp.session_secret (required then), so that replicas sharing it
	// accept each other's. [false]
	Nonce bool `mapstructure:"nonce"`
	// NonceLifetime is how long a nonce is accepted. [5m]
	NonceLifetime time.Duration `mapstructure:"nonce_lifetime"`
}

// defaultDPoP is the section's defaults, dpop's own.
func defaultDPoP() DPoP {
	return DPoP{Mode: dpop.Off.String(), Algorithms: slices.Clone(dpop.DefaultAlgorithms), MaxAge: dpop.DefaultMaxAge,
		Leeway: dpop.DefaultLeeway, NonceLifetime: dpop.DefaultNonceLifetime}
}

// validate reports the section's problems.
func (d DPoP) validate(bad func(keys []string, format string, args ...any)) {
	if _, err := dpop.ParseMode(d.Mode); err != nil {
		bad(keys("idp.dpop.mode"), "idp.dpop.mode %q: want off, allowed or required", d.Mode)
	}
	for _, k := range []struct {
		key string
		v   time.Duration
	}{{"idp.dpop.max_age", d.MaxAge}, {"idp.dpop.leeway", d.Leeway}, {"idp.dpop.nonce_lifetime", d.NonceLifetime}} {
		if k.v < 0 {
			bad(keys(k.key), "%s must not be negative, got %s", k.key, k.v)
		}
	}
}

// config is the section as idp.Config spells it. The replay cache is
// dpop's in-memory one (dpop.DefaultReplaySize proofs), or the session
// store's Redis, which serve sets.
func (d DPoP) config(headers bool) idp.DPoPConfig {
	mode, _ := dpop.ParseMode(d.Mode) // validated
	c := idp.DPoPConfig{Mode: mode, TrustForwarded: headers}
	c.Algorithms, c.MaxAge, c.Leeway = d.Algorithms, d.MaxAge, d.Leeway
	c.Nonce, c.NonceLifetime = d.Nonce, d.NonceLifetime
	return c
}
