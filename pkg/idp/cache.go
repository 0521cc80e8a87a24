package idp

import (
	"crypto/sha256"
	"sync"
	"time"
)

// tokenCache remembers verified tokens so that a token presented again is
// not re-verified. Entries are keyed by the SHA-256 of the token (the token
// itself is not kept), bounded in number, never served at or past the
// token's exp, and belong to one key-set generation: when the key material
// changes, the whole cache is dropped.
type tokenCache struct {
	max  int
	pool sync.Pool // *[]byte scratch for hashing without allocating

	mu      sync.RWMutex
	entries map[[32]byte]cacheEntry
	gen     uint64
}

type cacheEntry struct {
	id  *Identity
	exp time.Time
}

func newTokenCache(max int) *tokenCache {
	if max <= 0 {
		return nil
	}
	c := &tokenCache{max: max, entries: make(map[[32]byte]cacheEntry)}
	c.pool.New = func() any { b := make([]byte, 0, 2048); return &b }
	return c
}

func (c *tokenCache) key(raw string) [32]byte {
	bp := c.pool.Get().(*[]byte)
	b := append((*bp)[:0], raw...)
	sum := sha256.Sum256(b)
	*bp = b
	c.pool.Put(bp)
	return sum
}

// get returns the identity cached for raw under key-set generation gen, or
// nil.
func (c *tokenCache) get(raw string, now time.Time, gen uint64) *Identity {
	if c == nil {
		return nil
	}
	k := c.key(raw)
	c.mu.RLock()
	e, ok := c.entries[k]
	cgen := c.gen
	c.mu.RUnlock()
	if !ok || cgen != gen || !now.Before(e.exp) {
		return nil
	}
	return e.id
}

// put caches id for raw until exp, under key-set generation gen.
func (c *tokenCache) put(raw string, id *Identity, exp, now time.Time, gen uint64) {
	if c == nil {
		return
	}
	k := c.key(raw)
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		if gen < c.gen {
			return // verified against keys that have since changed
		}
		c.entries = make(map[[32]byte]cacheEntry)
		c.gen = gen
	}
	if len(c.entries) >= c.max {
		c.evictLocked(now)
	}
	c.entries[k] = cacheEntry{id: id, exp: exp}
}

// evictLocked frees room: expired entries first, then arbitrary ones (Go's
// map order is randomised), about 1/16 of the cache at a time so that
// eviction cost is amortised.
func (c *tokenCache) evictLocked(now time.Time) {
	n := c.max/16 + 1
	for k, e := range c.entries {
		if !now.Before(e.exp) {
			delete(c.entries, k)
			n--
		}
	}
	for k := range c.entries {
		if n <= 0 {
			break
		}
		delete(c.entries, k)
		n--
	}
}

// reset drops every entry; called when the key set changes.
func (c *tokenCache) reset(gen uint64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.entries = make(map[[32]byte]cacheEntry)
	c.gen = gen
	c.mu.Unlock()
}

func (c *tokenCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
