package shortener

import (
	"sync"
	"time"
)

// linkCache is a bounded in-process cache of resolved links, in front of
// the store on the redirect path. A link may change (PATCH /links/{code})
// or be deleted on another replica, so an entry is fresh for at most ttl
// after the store read that filled it began: every replica serves an edit
// within ttl of its commit. This replica drops its entry at once when it
// edits or deletes the link itself. Only found links are cached: a code
// unknown now may be created a moment later by another replica.
//
// Past ttl an entry is stale: for staleFor more it is still served when
// the store fails to answer (stale-if-error, as RFC 5861 names it), so
// that an outage of the store does not take down the links this replica
// served a moment ago; an edit then reaches this replica within ttl +
// staleFor of its commit instead of ttl.
//
// It keeps two generations of at most size/2 entries each: new entries go
// to the current one; when it is full it becomes the previous one and the
// oldest generation is dropped. Lookups read both. That bounds the cache
// at size entries with O(1) work and no allocation per hit, and keeps
// frequently used links (they are re-added after each drop) like an LRU
// would, roughly.
type linkCache struct {
	mu       sync.RWMutex
	cur      map[string]cacheEntry
	prev     map[string]cacheEntry
	half     int
	ttl      time.Duration
	staleFor time.Duration // 0: no stale entry is served
}

type cacheEntry struct {
	link Link
	// location is the Location header of the link's redirect, built once:
	// a redirect served from the cache sets it without allocating. It is
	// shared by every such redirect, so nothing may change its element.
	location []string
	expires  time.Time // end of freshness; served on error until expires + staleFor
}

// cacheState says what a lookup found.
type cacheState int

const (
	cacheMiss  cacheState = iota // nothing usable: ask the store
	cacheFresh                   // serve it
	cacheStale                   // ask the store; serve it if the store fails
)

func newLinkCache(size int, ttl, staleFor time.Duration) *linkCache {
	half := max(1, size/2)
	// The first generation grows with use: sized for half up front (the
	// default: 50,000 entries, 1.7 MiB of slots) it was memory the garbage
	// collector scanned at every cycle, however few links were cached.
	return &linkCache{cur: make(map[string]cacheEntry), half: half, ttl: ttl, staleFor: staleFor}
}

// get returns the cached link of code, its Location header value, and
// whether it is fresh, stale (past ttl, within staleFor more) or missing
// at now.
func (c *linkCache) get(code string, now time.Time) (Link, []string, cacheState) {
	c.mu.RLock()
	e, ok := c.cur[code]
	if !ok {
		e, ok = c.prev[code]
	}
	c.mu.RUnlock()
	if !ok {
		return Link{}, nil, cacheMiss
	}
	if now.Before(e.expires) {
		return e.link, e.location, cacheFresh
	}
	if c.staleFor > 0 && now.Before(e.expires.Add(c.staleFor)) {
		return e.link, e.location, cacheStale
	}
	return Link{}, nil, cacheMiss
}

// put caches l under its code, as read from the store by a read that
// began at readAt: the entry expires ttl after readAt, so that it never
// outlives an edit committed after the read by more than ttl.
func (c *linkCache) put(l Link, readAt time.Time) {
	e := cacheEntry{link: l, location: []string{l.URL}, expires: readAt.Add(c.ttl)}
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
