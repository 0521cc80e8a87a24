package shortener

import (
	"sync"
	"time"
)

// linkCache is a bounded in-process cache of resolved links, in front of
// the store on the redirect path. A link may change (PATCH /links/{code})
// or be deleted on another replica, so an entry is served for at most ttl
// after the store read that filled it began: every replica serves an edit
// within ttl of its commit. This replica drops its entry at once when it
// edits or deletes the link itself. Only found links are cached: a code
// unknown now may be created a moment later by another replica.
//
// It keeps two generations of at most size/2 entries each: new entries go
// to the current one; when it is full it becomes the previous one and the
// oldest generation is dropped. Lookups read both. That bounds the cache
// at size entries with O(1) work and no allocation per hit, and keeps
// frequently used links (they are re-added after each drop) like an LRU
// would, roughly.
type linkCache struct {
	mu   sync.RWMutex
	cur  map[string]cacheEntry
	prev map[string]cacheEntry
	half int
	ttl  time.Duration
	now  func() time.Time
}

type cacheEntry struct {
	link    Link
	expires time.Time
}

func newLinkCache(size int, ttl time.Duration, now func() time.Time) *linkCache {
	half := max(1, size/2)
	return &linkCache{cur: make(map[string]cacheEntry, half), half: half, ttl: ttl, now: now}
}

// get returns the cached link of code, if present and fresh.
func (c *linkCache) get(code string) (Link, bool) {
	c.mu.RLock()
	e, ok := c.cur[code]
	if !ok {
		e, ok = c.prev[code]
	}
	c.mu.RUnlock()
	if !ok || !c.now().Before(e.expires) {
		return Link{}, false
	}
	return e.link, true
}

// put caches l under its code, as read from the store by a read that
// began at readAt: the entry expires ttl after readAt, so that it never
// outlives an edit committed after the read by more than ttl.
func (c *linkCache) put(l Link, readAt time.Time) {
	e := cacheEntry{link: l, expires: readAt.Add(c.ttl)}
	c.mu.Lock()
	if len(c.cur) >= c.half {
		c.prev, c.cur = c.cur, make(map[string]cacheEntry, c.half)
	}
	c.cur[l.Code] = e
	c.mu.Unlock()
}

// len returns the number of entries held, fresh or not.
func (c *linkCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.cur) + len(c.prev)
}

// remove drops the entry of code, if any.
func (c *linkCache) remove(code string) {
	c.mu.Lock()
	delete(c.cur, code)
	delete(c.prev, code)
	c.mu.Unlock()
}
