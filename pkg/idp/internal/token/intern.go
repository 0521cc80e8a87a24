package token

import (
	"hash/maphash"
	"sync/atomic"
)

// Interner shares the strings that recur from token to token (issuer,
// audiences, azp, typ, scope, role and client names), so that a cache
// miss does not allocate them again and the verified-token cache does not
// hold thousands of copies of "offline_access". It is a fixed,
// direct-mapped table: a slot holds the last string hashed to it, so its
// memory is bounded (slots × maxInternLen) and a look-up takes no lock.
// Only claims of tokens whose signature has been verified reach it.
type Interner struct {
	seed  maphash.Seed
	slots [internSlots]atomic.Pointer[string]
}

const (
	internSlots  = 1024
	maxInternLen = 64
)

func NewInterner() *Interner { return &Interner{seed: maphash.MakeSeed()} }

// bytes returns b as a string, shared with earlier calls for the same
// bytes while the slot keeps it. A nil Interner allocates every time.
func (in *Interner) Bytes(b []byte) string {
	if in == nil || len(b) > maxInternLen {
		return string(b)
	}
	slot := &in.slots[maphash.Bytes(in.seed, b)%internSlots]
	if p := slot.Load(); p != nil && *p == string(b) {
		return *p
	}
	s := string(b)
	slot.Store(&s)
	return s
}
