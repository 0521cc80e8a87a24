package idp

import (
	"math"
	"testing"
	"time"
)

// The shards keep neither the token nor the decoded identity, only the
// verified payload; the bound holds across shards.
func TestTokenCacheEntries(t *testing.T) {
	c := newTokenCache(100)
	now := time.Now()
	payload := []byte(`{"sub":"u"}`)
	id := &Identity{User: &User{Sub: "u"}, Payload: &TokenPayload{Subject: "u", Raw: payload}, Raw: "tok-1"}
	putToken(c, "tok-1", id, now.Add(time.Minute), now, 0)
	n := 0
	for i := range c.shards {
		for _, e := range c.shards[i].entries {
			n++
			if &e.payload[0] != &payload[0] {
				t.Fatal("cache entry does not share the verified payload")
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d entries, want 1", n)
	}
	c.hot.reset() // the shards alone
	got, p, exp, _ := getToken(c, string([]byte("tok-1")), now, 0)
	if got != nil || string(p) != `{"sub":"u"}` || exp != now.Add(time.Minute).UnixNano() {
		t.Fatalf("shard hit = %v, %q, %d; want the payload and exp", got, p, exp)
	}
	if _, p, _, _ := getToken(c, "tok-1", now.Add(time.Minute), 0); p != nil {
		t.Fatal("served at exp")
	}
	if _, p, _, _ := getToken(c, "tok-1", now, 1); p != nil {
		t.Fatal("served under another key-set generation")
	}
	for i := range 1000 {
		putToken(c, time.Duration(i).String(), id, now.Add(time.Minute), now, 0)
	}
	if n := c.len(); n > 100 || n < 50 {
		t.Fatalf("cache holds %d entries, bound 100", n)
	}
	if small := newTokenCache(3); small.nShards*small.perShard > 3 {
		t.Fatalf("tiny cache: %d shards × %d entries exceeds 3", small.nShards, small.perShard)
	}
}

// unixNanos is UnixNano where that is defined and saturates outside, so a
// cache exp is never earlier than the token's and never wraps.
func TestUnixNanosSaturates(t *testing.T) {
	for _, tc := range []struct {
		t    time.Time
		want int64
	}{
		{time.Unix(1795443825, 5), 1795443825_000_000_005},
		{time.Unix(0, math.MaxInt64), math.MaxInt64},
		{time.Unix(0, math.MaxInt64).Add(time.Nanosecond), math.MaxInt64},
		{time.Unix(0, math.MaxInt64).Add(-time.Nanosecond), math.MaxInt64 - 1},
		{time.Unix(32503680000, 0), math.MaxInt64}, // the year 3000
		{time.Unix(1<<53, 0), math.MaxInt64},
		{time.Unix(0, math.MinInt64), math.MinInt64},
		{time.Unix(-1<<53, 0), math.MinInt64},
	} {
		if got := unixNanos(tc.t); got != tc.want {
			t.Errorf("unixNanos(%v) = %d, want %d", tc.t, got, tc.want)
		}
	}
}
