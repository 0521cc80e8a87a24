package dpop

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"hash/maphash"
	"sync"
	"time"
)

// DefaultReplaySize is the number of proofs NewMemoryReplay remembers when
// Options.Replay is nil. A proof is remembered until its iat+MaxAge+Leeway
// (65 s by default, 70 s at most), so the cache serves about 1,500
// accepted proofs a second, sustained; beyond that it fails closed
// (ErrReplayFull, which Verify wraps in ErrUnavailable). It takes about
// 35 bytes an entry, 3.5 MB full (TestMemoryReplay_BytesPerEntry logs
// it). Only proofs whose signature verified, by the key the token names
// when Request.JKT is set, take an entry.
const DefaultReplaySize = 100_000

// ErrReplayFull is the error of a memory replay cache that is full of
// unexpired entries: it refuses rather than forget one (fail closed).
var ErrReplayFull = errors.New("dpop: replay cache full")

// replayKey is the ReplayCache key of a proof: base64url of
// SHA-256(jkt NUL jti), fixed length whatever the jti, and the same key
// on every replica. The thumbprint is in it so that one client cannot
// block another's proof by guessing its jti.
func replayKey(jkt, jti string) string {
	h := sha256.New()
	h.Write([]byte(jkt))
	h.Write([]byte{0})
	h.Write([]byte(jti))
	var sum [sha256.Size]byte
	return base64.RawURLEncoding.EncodeToString(h.Sum(sum[:0]))
}

// memoryReplay is a bounded in-memory ReplayCache.
type memoryReplay struct {
	max   int
	seeds [2]maphash.Seed
	mu    sync.Mutex
	// seen maps a 128-bit hash of the key to its expiry (Unix ns): a
	// quarter of the memory of the key itself. The seeds are random, so
	// no one can aim two keys at one hash.
	seen map[[2]uint64]int64
	// minUntil is the earliest expiry in seen: when the cache is full and
	// now is before it, no entry has expired and a sweep would be wasted.
	minUntil int64
	now      func() time.Time
}

// NewMemoryReplay returns a ReplayCache for one process that remembers at
// most max keys (max <= 0: DefaultReplaySize). When it is full, expired
// keys are dropped first; if none has expired, Claim fails with
// ErrReplayFull rather than forget a key that could still be replayed.
func NewMemoryReplay(max int) ReplayCache { return newMemoryReplay(max, time.Now) }

// newMemoryReplay is NewMemoryReplay on the clock now: a Verifier gives
// its own, so that a test's clock expires its entries.
func newMemoryReplay(max int, now func() time.Time) *memoryReplay {
	if max <= 0 {
		max = DefaultReplaySize
	}
	return &memoryReplay{
		max:   max,
		seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		seen:  make(map[[2]uint64]int64),
		now:   now,
	}
}

// Claim implements ReplayCache.
func (m *memoryReplay) Claim(_ context.Context, key string, until time.Time) (bool, error) {
	k := [2]uint64{maphash.String(m.seeds[0], key), maphash.String(m.seeds[1], key)}
	u := until.UnixNano()
	now := m.now().UnixNano()
	m.mu.Lock()
	defer m.mu.Unlock()
	exp, ok := m.seen[k]
	if ok && exp > now {
		return false, nil
	}
	if !ok && len(m.seen) >= m.max {
		if now < m.minUntil {
			return false, ErrReplayFull
		}
		m.sweep(now)
		if len(m.seen) >= m.max {
			return false, ErrReplayFull
		}
	}
	if len(m.seen) == 0 || u < m.minUntil {
		m.minUntil = u
	}
	m.seen[k] = u
	return true, nil
}

// sweep drops the expired keys and recomputes minUntil.
func (m *memoryReplay) sweep(now int64) {
	minUntil := int64(0)
	for k, exp := range m.seen {
		if exp <= now {
			delete(m.seen, k)
			continue
		}
		if minUntil == 0 || exp < minUntil {
			minUntil = exp
		}
	}
	m.minUntil = minUntil
}
