package token

import (
	"testing"
	"time"
	"unsafe"
)

// The strings that recur between tokens are shared; the per-token ones are
// the token's own; and the shared ones read the same as without sharing.
func TestInternedClaims(t *testing.T) {
	// A slot holds the last string hashed to it, and the seed is random:
	// take an interner whose slots keep these strings apart, so that the
	// test does not fail on a chance collision (about 1 run in 25).
	in := NewInterner()
	for tries := 0; !distinctSlots(in, "https://sso/realms/demo", "alice", "bob", "shortener", "account",
		"Bearer", "openid email", "offline_access", "creator", "editor"); tries++ {
		if tries == 100 {
			t.Fatal("no interner without a collision in 100 seeds")
		}
		in = NewInterner()
	}
	payload := func(sub string) []byte {
		return []byte(`{"iss":"https://sso/realms/demo","sub":"` + sub + `","aud":["shortener","account"],` +
			`"azp":"shortener","typ":"Bearer","scope":"openid email",` +
			`"realm_access":{"roles":["offline_access","creator"]},` +
			`"resource_access":{"shortener":{"roles":["editor"]}},"exp":2000000000}`)
	}
	a, err := DecodeClaims(in, payload("alice"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := DecodeClaims(in, payload("bob"))
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
	plain, err := DecodeClaims(nil, payload("alice"))
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
		if got := in.Bytes([]byte(s)); got != s {
			t.Fatalf("Interner returned %q for %q", got, s)
		}
	}
	if long := string(make([]byte, maxInternLen+1)); in.Bytes([]byte(long)) != long {
		t.Fatal("long string mangled")
	}
}

// distinctSlots reports whether every string has a slot of its own in in.
func distinctSlots(in *Interner, strs ...string) bool {
	seen := make(map[any]bool, len(strs))
	for _, s := range strs {
		slot := in.slots.Bytes([]byte(s))
		if seen[slot] {
			return false
		}
		seen[slot] = true
	}
	return true
}
