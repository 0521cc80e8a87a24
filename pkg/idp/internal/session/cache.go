package session

import (
	"hash/maphash"
	"sync"
	"time"
)

// openedCache remembers opened cookie-store sessions by a keyed 128-bit
// hash of the cookie value, so that a request with a known cookie skips
// the decryption. An entry may point a cookie superseded by a refresh to
// the refreshed session and its new cookie value. It is not a
// directmap.Table like the other look-up tables: it keeps no cookie to
// compare, and evicts expired sessions first (see package directmap).
type openedCache struct {
	max    int
	s1, s2 maphash.Seed

	mu      sync.Mutex
	entries map[[2]uint64]openedEntry
}

type openedEntry struct {
	s       *Session
	replace string // the cookie value that supersedes the presented one, if any
}

func newOpenedCache(max int) *openedCache {
	if max <= 0 {
		return nil
	}
	return &openedCache{max: max, s1: maphash.MakeSeed(), s2: maphash.MakeSeed(), entries: map[[2]uint64]openedEntry{}}
}

// key hashes the concatenation of parts (a cookie's chunks) without
// building it.
func (c *openedCache) key(parts ...string) [2]uint64 {
	var h1, h2 maphash.Hash
	h1.SetSeed(c.s1)
	h2.SetSeed(c.s2)
	for _, p := range parts {
		_, _ = h1.WriteString(p)
		_, _ = h2.WriteString(p)
	}
	return [2]uint64{h1.Sum64(), h2.Sum64()}
}

func (c *openedCache) get(parts ...string) (openedEntry, bool) {
	if c == nil {
		return openedEntry{}, false
	}
	k := c.key(parts...)
	c.mu.Lock()
	e, ok := c.entries[k]
	c.mu.Unlock()
	return e, ok
}

func (c *openedCache) put(v string, e openedEntry, now time.Time) {
	if c == nil {
		return
	}
	k := c.key(v)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		// Expired sessions first, then arbitrary ones (map order is
		// random), 1/16 of the cache at a time.
		n := c.max/16 + 1
		for k, old := range c.entries {
			if old.s.Expires <= now.Unix() {
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
	c.entries[k] = e
}

func (c *openedCache) drop(v string) {
	if c == nil {
		return
	}
	k := c.key(v)
	c.mu.Lock()
	delete(c.entries, k)
	c.mu.Unlock()
}

// revocations are the cookie store's record of back-channel logouts: a
// provider session (sid) or a user (sub, for sessions created before the
// logout) whose sessions are over, kept for the sessions' max age.
type revocations struct {
	mu   sync.Mutex
	ids  map[string]int64 // session ID (local logout) -> until
	sids map[string]int64 // provider session -> until
	subs map[string][2]int64
}

func (rv *revocations) revokeID(id string, until int64) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rv.ids == nil {
		rv.ids = map[string]int64{}
	}
	rv.ids[id] = until
}

func (rv *revocations) revokeSID(sid string, until int64) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rv.sids == nil {
		rv.sids = map[string]int64{}
	}
	rv.sids[sid] = until
}

func (rv *revocations) revokeSub(sub string, at, until int64) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rv.subs == nil {
		rv.subs = map[string][2]int64{}
	}
	rv.subs[sub] = [2]int64{at, until}
}

// revoked reports whether s was ended by a back-channel logout; expired
// records are forgotten on the way.
func (rv *revocations) revoked(s *Session, now int64) bool {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if len(rv.ids) == 0 && len(rv.sids) == 0 && len(rv.subs) == 0 {
		return false
	}
	if until, ok := rv.ids[s.ID]; ok {
		if now < until {
			return true
		}
		delete(rv.ids, s.ID)
	}
	if until, ok := rv.sids[s.SID]; ok && s.SID != "" {
		if now < until {
			return true
		}
		delete(rv.sids, s.SID)
	}
	if r, ok := rv.subs[s.Sub]; ok {
		if now < r[1] {
			return s.Created <= r[0]
		}
		delete(rv.subs, s.Sub)
	}
	return false
}
