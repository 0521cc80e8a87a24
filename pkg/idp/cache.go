package idp

import (
	"crypto/sha256"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/directmap"
)

// tokenCache remembers verified tokens so that a token presented again is
// not re-verified. In front of it, a small table of the tokens presented
// recently (hotTokens) answers repeated tokens with the Identity verified
// before, without hashing them with SHA-256. Behind it, entries are keyed
// by the SHA-256 of the token's signing input (header.payload) and hold
// the signature, which a hit must match exactly: that digest is the one an
// RS256, PS256 or ES256 signature check needs, so a miss hashes the token
// once (verifyWith), not twice. Entries are bounded in number, never
// served at or past the token's exp, and belong to one key-set generation:
// when the key material changes, the whole cache is dropped.
//
// Memory and garbage collection: an entry keeps neither the token nor the
// decoded Identity, only the verified JSON payload and the signature's
// text (without pointers, which the garbage collector marks without
// scanning) and its exp, so that a full cache adds little to each collection's work; a hit
// from the shards decodes the payload again (far cheaper than a signature)
// and makes the token hot. TestCacheEntryFootprint holds an entry to its
// heap budget (bench/README.md, "Verified-token cache", has the numbers).
// The cache is split in shards, each with its own lock and its own share
// of the bound, so that eviction (expired entries first, then arbitrary
// ones, 1/16 of a shard at a time) never holds up more than a shard's
// readers.
type tokenCache struct {
	hot      hotTokens
	nShards  int       // cacheShards, or fewer for a tiny bound
	perShard int       // nShards × perShard ≤ the bound
	pool     sync.Pool // *[]byte scratch for hashing without allocating
	shards   [cacheShards]cacheShard
}

const cacheShards = 16

type cacheShard struct {
	mu      sync.RWMutex
	entries map[[32]byte]cacheEntry
	gen     uint64
	_       [64]byte // keep shards' locks on separate cache lines
}

type cacheEntry struct {
	payload []byte // the verified JSON payload (TokenPayload.Raw), shared, never modified
	sig     string // cacheKey.sig of the token (a copy: the token is not kept)
	exp     int64  // unix nanoseconds
}

func newTokenCache(max int) *tokenCache {
	if max <= 0 {
		return nil
	}
	n := min(max, cacheShards)
	c := &tokenCache{nShards: n, perShard: max / n}
	c.hot.slots = directmap.Make[hotEntry](hotSlots)
	for i := range c.shards {
		c.shards[i].entries = make(map[[32]byte]cacheEntry)
	}
	c.pool.New = func() any { b := make([]byte, 0, 2048); return &b }
	return c
}

// cacheKey locates a token in the cache: its hot slot, the SHA-256 of its
// signing input, its signature and its shard. lookup finds the slot and
// get the rest, once per request; promote, put and the signature check
// (verifyJWT) reuse them.
type cacheKey struct {
	hot *atomic.Pointer[hotEntry]
	// sum is the SHA-256 of raw up to its last '.' (the signing input of
	// a JWS), or of all of raw when it has none; sig is the rest, from
	// that '.' on ("" without one). The pair determines raw.
	sum   [32]byte
	sig   string // a part of raw, not a copy
	shard *cacheShard
}

// hash fills in k's digest, signature and shard.
func (c *tokenCache) hash(raw string, k *cacheKey) {
	in := raw
	if dot := strings.LastIndexByte(raw, '.'); dot >= 0 {
		in, k.sig = raw[:dot], raw[dot:]
	}
	bp := c.pool.Get().(*[]byte)
	b := append((*bp)[:0], in...)
	k.sum = sha256.Sum256(b)
	*bp = b
	c.pool.Put(bp)
	k.shard = &c.shards[int(k.sum[0])%c.nShards]
}

// signingSum returns the SHA-256 of the token's signing input when get
// computed it, else nil.
func (k *cacheKey) signingSum() *[32]byte {
	if k.shard == nil || k.sig == "" {
		return nil
	}
	return &k.sum
}

// lookup returns the Identity the hot table holds for raw under key-set
// generation gen at now (verified before and shared), or nil; and raw's
// hot slot, the start of its cacheKey for get, promote and put.
func (c *tokenCache) lookup(raw string, now time.Time, gen uint64) (*Identity, *atomic.Pointer[hotEntry]) {
	if c == nil {
		return nil, nil
	}
	slot := c.hot.slot(raw)
	return c.hot.get(slot, raw, now.UnixNano(), gen), slot
}

// get looks raw up in the shards, after lookup missed (k.hot is the slot
// it returned). A hit
// returns the verified payload and its exp (unix nanoseconds) for the
// caller to decode (and hand to promote); a miss returns neither. It
// fills in k's hash for put.
func (c *tokenCache) get(raw string, k *cacheKey, now time.Time, gen uint64) (payload []byte, exp int64) {
	if c == nil {
		return nil, 0
	}
	c.hash(raw, k)
	s := k.shard
	s.mu.RLock()
	e, ok := s.entries[k.sum]
	sgen := s.gen
	s.mu.RUnlock()
	if !ok || sgen != gen || now.UnixNano() >= e.exp || e.sig != k.sig {
		return nil, 0
	}
	return e.payload, e.exp
}

// promote makes id, decoded from a payload get returned, raw's hot entry.
func (c *tokenCache) promote(k cacheKey, id *Identity, exp int64, gen uint64) {
	if c == nil || k.hot == nil {
		return
	}
	c.hot.put(k.hot, id, exp, gen)
}

// put caches id (whose Raw is the token and whose Payload.Raw is the
// verified payload) under k, the token's key from get, until
// exp, under key-set generation gen.
func (c *tokenCache) put(k cacheKey, id *Identity, exp, now time.Time, gen uint64) {
	if c == nil || k.shard == nil || id.Payload == nil || len(id.Payload.Raw) == 0 {
		return
	}
	s := k.shard
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen != s.gen {
		if gen < s.gen {
			return // verified against keys that have since changed
		}
		s.entries = make(map[[32]byte]cacheEntry)
		s.gen = gen
	}
	if len(s.entries) >= c.perShard {
		s.evictLocked(now.UnixNano(), c.perShard/16+1)
	}
	expNanos := unixNanos(exp)
	s.entries[k.sum] = cacheEntry{payload: id.Payload.Raw, sig: strings.Clone(k.sig), exp: expNanos}
	c.hot.put(k.hot, id, expNanos, gen)
}

// unixNanos is t.UnixNano(), saturated: a token's exp may lie past 2262,
// where t.UnixNano() is undefined (it wraps: a token valid until the year
// 3000 read as expired in the cache and was verified again on every
// request). Past the range it is math.MaxInt64, which no clock reading in
// nanoseconds reaches; before it math.MinInt64, which every one is past.
func unixNanos(t time.Time) int64 {
	const maxSec, maxNsec = math.MaxInt64 / int64(time.Second), math.MaxInt64 % int64(time.Second)
	switch s := t.Unix(); {
	case s > maxSec || s == maxSec && int64(t.Nanosecond()) > maxNsec:
		return math.MaxInt64
	case s < -maxSec:
		return math.MinInt64
	}
	return t.UnixNano()
}

// evictLocked frees room for n entries: expired entries first, then
// arbitrary ones (Go's map order is randomised).
func (s *cacheShard) evictLocked(now int64, n int) {
	for k, e := range s.entries {
		if now >= e.exp {
			delete(s.entries, k)
			n--
		}
	}
	for k := range s.entries {
		if n <= 0 {
			break
		}
		delete(s.entries, k)
		n--
	}
}

// reset drops every entry; called when the key set changes.
func (c *tokenCache) reset(gen uint64) {
	if c == nil {
		return
	}
	c.hot.reset()
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.entries = make(map[[32]byte]cacheEntry)
		s.gen = gen
		s.mu.Unlock()
	}
}

func (c *tokenCache) len() int {
	if c == nil {
		return 0
	}
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		n += len(s.entries)
		s.mu.RUnlock()
	}
	return n
}
