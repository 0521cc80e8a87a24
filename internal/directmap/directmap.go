// Package directmap is a fixed-size, direct-mapped table of pointers: a
// key hashes to exactly one slot, and a slot holds the last value stored
// in it. Look-ups take no lock and allocate nothing; memory is bounded by
// the number of slots whatever the traffic; a collision simply replaces
// the older value.
//
// The table does not know what a match is: the caller loads a slot's
// value and compares it with the key it looked up (the whole key, so the
// hash need not resist collisions), and decides whether to store.
//
// Users: pkg/idp's hot-token table (the whole token, key-set generation
// and exp must match), the claim-string interner in
// pkg/idp/internal/token (the string), and pkg/proxy's identity-header
// memo (the *idp.User pointer). pkg/idp's cache of opened session cookies
// does not use it: it keys a locked map by a 128-bit hash of the cookie
// without keeping the cookie, evicts expired sessions first and lets an
// entry point a superseded cookie at its replacement; a direct-mapped slot
// would have to keep and compare the whole cookie, and would forget
// sessions under collisions.
package directmap

import (
	"hash/maphash"
	"sync/atomic"
)

// Table is a direct-mapped table of *V. Make it with Make; the zero Table
// has no slots and must not be used.
type Table[V any] struct {
	seed  maphash.Seed
	mask  uint64
	slots []atomic.Pointer[V]
}

// Make returns a table of n slots; n must be a power of two.
func Make[V any](n int) Table[V] {
	if n <= 0 || n&(n-1) != 0 {
		panic("directmap: the number of slots must be a power of two")
	}
	return Table[V]{seed: maphash.MakeSeed(), mask: uint64(n - 1), slots: make([]atomic.Pointer[V], n)}
}

// String returns the slot of the key s.
func (t *Table[V]) String(s string) *atomic.Pointer[V] {
	return &t.slots[maphash.String(t.seed, s)&t.mask]
}

// Bytes returns the slot of the key b.
func (t *Table[V]) Bytes(b []byte) *atomic.Pointer[V] {
	return &t.slots[maphash.Bytes(t.seed, b)&t.mask]
}

// Comparable returns t's slot of the key k (a pointer hashes by address).
func Comparable[K comparable, V any](t *Table[V], k K) *atomic.Pointer[V] {
	return &t.slots[maphash.Comparable(t.seed, k)&t.mask]
}

// Len returns the number of slots.
func (t *Table[V]) Len() int { return len(t.slots) }

// Reset empties every slot.
func (t *Table[V]) Reset() {
	for i := range t.slots {
		t.slots[i].Store(nil)
	}
}
