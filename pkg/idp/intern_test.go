package idp

import (
	"testing"
	"time"
	"unsafe"
)

// The strings that recur between tokens are shared; the per-token ones are
// the token's own; and the shared ones read the same as without sharing.
func TestInternedClaims(t *testing.T) {
	in := newInterner()
	payload := func(sub string) []byte {
		return []byte(`{"iss":"https://sso/realms/demo","sub":"` + sub + `","aud":["shortener","account"],` +
			`"azp":"shortener","typ":"Bearer","scope":"openid email",` +
			`"realm_access":{"roles":["offline_access","creator"]},` +
			`"resource_access":{"shortener":{"roles":["editor"]}},"exp":2000000000}`)
	}
	a, err := decodeClaims(in, payload("alice"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := decodeClaims(in, payload("bob"))
	if err != nil {
		t.Fatal(err)
	}
	same := func(x, y string) bool { return unsafe.StringData(x) == unsafe.StringData(y) }
	for name, pair := range map[string][2]string{
		"iss": {a.Issuer, b.Issuer}, "aud": {a.Audience[1], b.Audience[1]}, "azp": {a.AZP, b.AZP},
		"typ": {a.Typ, b.Typ}, "scope": {a.Scope, b.Scope}, "realm role": {a.RealmRoles[1], b.RealmRoles[1]},
		"client role": {a.ResourceAccess["shortener"].Roles[0], b.ResourceAccess["shortener"].Roles[0]},
	} {
		if pair[0] != pair[1] || !same(pair[0], pair[1]) {
			t.Errorf("%s: %q and %q are not one shared string", name, pair[0], pair[1])
		}
	}
	plain, err := decodeClaims(nil, payload("alice"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Issuer != plain.Issuer || a.Scope != plain.Scope || a.Subject != plain.Subject ||
		len(a.RealmRoles) != len(plain.RealmRoles) || a.RealmRoles[0] != plain.RealmRoles[0] {
		t.Errorf("interned claims differ from plain ones: %+v vs %+v", a, plain)
	}
	if a.Subject == b.Subject {
		t.Error("per-token claims mixed up")
	}
	// A slot holds the last string hashed to it: a collision never returns
	// another string.
	for i := range 5 * internSlots {
		s := string(rune('a'+i%26)) + time.Duration(i).String()
		if got := in.bytes([]byte(s)); got != s {
			t.Fatalf("interner returned %q for %q", got, s)
		}
	}
	if long := string(make([]byte, maxInternLen+1)); in.bytes([]byte(long)) != long {
		t.Fatal("long string mangled")
	}
}

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
	got, p, exp, _ := c.get(string([]byte("tok-1")), now, 0)
	if got != nil || string(p) != `{"sub":"u"}` || exp != now.Add(time.Minute).UnixNano() {
		t.Fatalf("shard hit = %v, %q, %d; want the payload and exp", got, p, exp)
	}
	if _, p, _, _ := c.get("tok-1", now.Add(time.Minute), 0); p != nil {
		t.Fatal("served at exp")
	}
	if _, p, _, _ := c.get("tok-1", now, 1); p != nil {
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
