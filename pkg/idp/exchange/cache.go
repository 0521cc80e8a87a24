package exchange

import (
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// cache keeps exchanged tokens by (subject token hash, target) until
// their renewal time, bounded in size, findable by session and subject.
type cache struct {
	max int
	mu  sync.Mutex
	m   map[string]*entry
	gen uint64 // incremented by every drop: a flight begun before one is not stored
}

type entry struct {
	tok      *oauth2.Token
	renew    time.Time
	sid, sub string
}

func newCache(max int) *cache { return &cache{max: max, m: map[string]*entry{}} }

// get returns the token of key when it is good at now.
func (c *cache) get(key string, now time.Time) *oauth2.Token {
	c.mu.Lock()
	e := c.m[key]
	c.mu.Unlock()
	if e == nil || !now.Before(e.renew) {
		return nil
	}
	return e.tok
}

func (c *cache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put stores tok until renew unless the cache is off, renew is zero or
// passed, or a drop happened since gen (the session may have ended while
// the exchange was in flight).
func (c *cache) put(key string, tok *oauth2.Token, now, renew time.Time, sid, sub string, gen uint64) {
	if c.max < 0 || !now.Before(renew) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if len(c.m) >= c.max {
		c.evict(now)
	}
	c.m[key] = &entry{tok: tok, renew: renew, sid: sid, sub: sub}
}

// evict makes room: the entries due for renewal at now, then any others until a quarter of the room is free.
func (c *cache) evict(now time.Time) {
	for k, e := range c.m {
		if !now.Before(e.renew) {
			delete(c.m, k)
		}
	}
	for k := range c.m {
		if len(c.m) < c.max-c.max/4 {
			break
		}
		delete(c.m, k)
	}
}

// drop removes the entries match selects and returns how many.
func (c *cache) drop(match func(*entry) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	n := 0
	for k, e := range c.m {
		if match(e) {
			delete(c.m, k)
			n++
		}
	}
	return n
}
