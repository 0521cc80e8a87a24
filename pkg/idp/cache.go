package idp

import (
	"crypto/sha256"
	"sync"
	"time"
)

// tokenCache remembers verified tokens so that a token presented again is
// not re-verified. Entries are keyed by the SHA-256 of the token, bounded
// in number, never served at or past the token's exp, and belong to one
// key-set generation: when the key material changes, the whole cache is
// dropped.
//
// Memory: an entry keeps the identity without the token itself (a hit
// re-attaches the token the request carries) and shares the strings that
// recur between tokens (see interner), so a typical Keycloak access token
// costs about 2 KiB of heap (TestCacheEntryFootprint); the default 10,000
// entries about 20 MiB. The cache is split in shards, each
// with its own lock and its own share of the bound, so that eviction
// (expired entries first, then arbitrary ones, 1/16 of a shard at a time)
// never holds up more than a shard's readers.
type tokenCache struct {
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
	id  *Identity // Raw is empty: the token is not kept
	exp int64     // unix nanoseconds
}

func newTokenCache(max int) *tokenCache {
	if max <= 0 {
		return nil
	}
	n := min(max, cacheShards)
	c := &tokenCache{nShards: n, perShard: max / n}
	for i := range c.shards {
		c.shards[i].entries = make(map[[32]byte]cacheEntry)
	}
	c.pool.New = func() any { b := make([]byte, 0, 2048); return &b }
	return c
}

func (c *tokenCache) key(raw string) ([32]byte, *cacheShard) {
	bp := c.pool.Get().(*[]byte)
	b := append((*bp)[:0], raw...)
	sum := sha256.Sum256(b)
	*bp = b
	c.pool.Put(bp)
	return sum, &c.shards[int(sum[0])%c.nShards]
}

// get returns the identity cached for raw under key-set generation gen, or
// nil.
func (c *tokenCache) get(raw string, now time.Time, gen uint64) *Identity {
	if c == nil {
		return nil
	}
	k, s := c.key(raw)
	s.mu.RLock()
	e, ok := s.entries[k]
	sgen := s.gen
	s.mu.RUnlock()
	if !ok || sgen != gen || now.UnixNano() >= e.exp {
		return nil
	}
	return &Identity{User: e.id.User, Payload: e.id.Payload, Raw: raw}
}

// put caches id for raw until exp, under key-set generation gen.
func (c *tokenCache) put(raw string, id *Identity, exp, now time.Time, gen uint64) {
	if c == nil {
		return
	}
	k, s := c.key(raw)
	kept := &Identity{User: id.User, Payload: id.Payload}
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
	s.entries[k] = cacheEntry{id: kept, exp: exp.UnixNano()}
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
