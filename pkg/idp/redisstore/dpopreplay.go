package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp/dpop"
)

// DPoPReplay returns the DPoP replay cache of s (idp.DPoPConfig's
// Options.Replay), shared by every replica that uses the same Redis and
// prefix, so that a proof replayed to another replica is refused too.
// Each proof costs one SET NX PX (the key expires when the proof could no
// longer pass), bounded by the Store's timeout; a failure is an error
// naming Redis, which the verifier answers 503.
func (s *Store) DPoPReplay() dpop.ReplayCache { return dpopReplay{s} }

type dpopReplay struct{ s *Store }

// dpopReplayPrefix keeps the proofs' keys apart from the sessions'.
const dpopReplayPrefix = "dpop-jti:"

// Claim records key until until: true the first time.
func (r dpopReplay) Claim(ctx context.Context, key string, until time.Time) (bool, error) {
	ttl := time.Until(until)
	if ttl < time.Millisecond {
		ttl = time.Millisecond // PX needs a positive time; the proof is about to expire
	}
	first, err := r.s.SetNX(ctx, dpopReplayPrefix+key, []byte{1}, ttl)
	if err != nil {
		return false, fmt.Errorf("the DPoP replay cache in Redis (%s): %w", r.s.addr(), err)
	}
	return first, nil
}

// Name names the cache in the answers to its outages.
func (dpopReplay) Name() string { return "Redis" }
