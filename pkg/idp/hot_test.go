package idp

import (
	"strings"
	"testing"
	"time"
)

// putToken caches id for raw as verify does: with the key lookup and get
// return.
func putToken(c *tokenCache, raw string, id *Identity, exp, now time.Time, gen uint64) {
	_, slot := c.lookup(raw, now, gen)
	k := cacheKey{hot: slot}
	c.get(raw, &k, now, gen)
	c.put(k, id, exp, now, gen)
}

// getToken looks raw up as verify does: the hot table, then the shards.
func getToken(c *tokenCache, raw string, now time.Time, gen uint64) (id *Identity, payload []byte, exp int64, k cacheKey) {
	id, slot := c.lookup(raw, now, gen)
	k = cacheKey{hot: slot}
	if id != nil {
		return id, nil, 0, k
	}
	payload, exp = c.get(raw, &k, now, gen)
	return nil, payload, exp, k
}

// The hot table answers a repeated token with the identity verified
// before, without allocating, and never for another token, another key-set
// generation, at or past exp, or after a reset.
func TestHotTokens(t *testing.T) {
	c := newTokenCache(100)
	now := time.Now()
	exp := now.Add(time.Minute)
	id := &Identity{User: &User{Sub: "u"}, Payload: &TokenPayload{Subject: "u", Raw: []byte(`{"sub":"u"}`)}, Raw: "tok-1"}
	putToken(c, "tok-1", id, exp, now, 3)

	hot := func(raw string, at time.Time, gen uint64) *Identity {
		got, _, _, _ := getToken(c, raw, at, gen)
		return got
	}
	presented := string([]byte("tok-1"))
	if got := hot(presented, now, 3); got != id {
		t.Fatalf("hot hit = %p, want the identity verified before %p", got, id)
	}
	if n := testing.AllocsPerRun(100, func() { hot(presented, now, 3) }); n != 0 {
		t.Fatalf("hot hit allocates %.0f times", n)
	}
	if hot("tok-2", now, 3) != nil {
		t.Fatal("another token answered")
	}
	for i := range len("tok-1") { // a token differing in one byte
		b := []byte("tok-1")
		b[i] ^= 1
		if hot(string(b), now, 3) != nil {
			t.Fatalf("%q answered as tok-1", b)
		}
	}
	if hot("tok-1", now, 4) != nil {
		t.Fatal("answered under a newer key-set generation")
	}
	if hot("tok-1", exp, 3) != nil {
		t.Fatal("answered at exp")
	}

	// A hit from the shards, decoded by the caller, becomes the hot entry.
	c.hot.reset()
	got, payload, pexp, k := getToken(c, "tok-1", now, 3)
	if got != nil || payload == nil || pexp != exp.UnixNano() {
		t.Fatalf("shard hit = %v, %q, %d", got, payload, pexp)
	}
	decoded := &Identity{User: &User{Sub: "u"}, Payload: &TokenPayload{Raw: payload}, Raw: "tok-1"}
	c.promote(k, decoded, pexp, 3)
	if hot("tok-1", now, 3) != decoded {
		t.Fatal("promoted identity not hot")
	}

	c.reset(5)
	if got, payload, _, _ := getToken(c, "tok-1", now, 5); got != nil || payload != nil {
		t.Fatal("answered after a key-set change")
	}
}

// Tokens longer than hotMaxToken stay out of the hot table (its memory is
// bounded) but are cached in the shards.
func TestHotTokensLongToken(t *testing.T) {
	c := newTokenCache(100)
	now := time.Now()
	long := strings.Repeat("a", hotMaxToken+1)
	id := &Identity{User: &User{Sub: "u"}, Payload: &TokenPayload{Raw: []byte(`{}`)}, Raw: long}
	putToken(c, long, id, now.Add(time.Minute), now, 0)
	if e := c.hot.slot(long).Load(); e != nil {
		t.Fatal("a token over hotMaxToken is in the hot table")
	}
	if got, payload, _, _ := getToken(c, long, now, 0); got != nil || payload == nil {
		t.Fatal("long token not cached in the shards")
	}
}
