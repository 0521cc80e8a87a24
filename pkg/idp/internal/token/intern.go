package token

import "github.com/idp-proxy/idp-proxy/internal/directmap"

// Interner shares the strings that recur from token to token (issuer,
// audiences, azp, typ, scope, role and client names), so that a cache
// miss does not allocate them again and the verified-token cache does not
// hold thousands of copies of "offline_access". It is a direct-mapped
// table (a slot holds the last string hashed to it), so its memory is
// bounded (internSlots × maxInternLen) and a look-up takes no lock. Only
// claims of tokens whose signature has been verified reach it.
type Interner struct {
	slots directmap.Table[string]
}

const (
	internSlots  = 1024
	maxInternLen = 64
)

// NewInterner returns an empty interner.
func NewInterner() *Interner { return &Interner{slots: directmap.Make[string](internSlots)} }

// Bytes returns b as a string, shared with earlier calls for the same
// bytes while the slot keeps it. A nil Interner allocates every time.
func (in *Interner) Bytes(b []byte) string {
	if in == nil || len(b) > maxInternLen {
		return string(b)
	}
	slot := in.slots.Bytes(b)
	if p := slot.Load(); p != nil && *p == string(b) {
		return *p
	}
	s := string(b)
	slot.Store(&s)
	return s
}
