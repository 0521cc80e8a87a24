package dpop

import (
	"errors"
	"strconv"
	"sync"
	"testing"
)

// Verify is safe for concurrent use (run with -race): the key cache, the
// interner, the nonces and the replay cache are shared. Each proof,
// presented by two workers at once, is accepted exactly once.
func TestVerify_Concurrent(t *testing.T) {
	v := newTestVerifier(t, Options{Nonce: true, NonceSecret: make([]byte, 32)})
	const workers, each = 4, 8
	proofs := make([][]string, workers)
	for w := range proofs {
		for i := range each {
			p := defaultParts()
			if i%2 == 1 {
				p = p.withKey("Ed25519", "EdDSA")
			}
			p.claims["jti"] = strconv.Itoa(w*each + i)
			p.claims["nonce"] = v.Nonce()
			proofs[w] = append(proofs[w], p.encode(t))
		}
	}
	var mu sync.Mutex
	accepted := map[string]int{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				for _, proof := range []string{proofs[w][i], proofs[(w+1)%workers][i]} {
					_, err := v.Verify(ctx, testRequest(proof))
					mu.Lock()
					if err == nil {
						accepted[proof]++
					} else if !errors.Is(err, ErrReplay) {
						t.Errorf("refused with %v, want a replay", err)
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for w := range proofs {
		for i, proof := range proofs[w] {
			if accepted[proof] != 1 {
				t.Errorf("proof %d/%d accepted %d times", w, i, accepted[proof])
			}
		}
	}
}
