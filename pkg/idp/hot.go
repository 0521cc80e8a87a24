package idp

import (
	"sync/atomic"

	"github.com/idp-proxy/idp-proxy/internal/directmap"
)

// hotTokens is a small table in front of the sharded token cache for the
// tokens presented again and again (a client sends its token on every
// request of its keep-alive connection). A hit compares the whole token
// with the one verified before, so the table's hash need not resist
// collisions: it costs one maphash of the token's end, no SHA-256, no lock and
// no allocation, and hands back the Identity verified before, shared
// between the requests that present the token (Identity values are
// read-only; see Identity).
//
// It is direct-mapped (a slot holds the last token hashed to it) and keeps
// the tokens themselves, at most hotSlots of them and none longer than
// hotMaxToken bytes: its memory is bounded by about 1 MiB whatever the
// traffic. The sharded cache behind it keeps no token.
type hotTokens struct {
	slots directmap.Table[hotEntry]
}

const (
	hotSlots    = 256
	hotMaxToken = 4 << 10
	hotHashTail = 32
)

type hotEntry struct {
	id  *Identity // id.Raw is the token
	exp int64     // unix nanoseconds
	gen uint64    // key-set generation the token was verified under
}

// slot returns the slot of raw, chosen by its last hotHashTail bytes: the
// end of a JWS's signature, which differs between any two tokens signed,
// so that hashing the rest (a kilobyte, about 1,000 instructions under
// callgrind) would spread them no better; a hit compares all of raw.
func (h *hotTokens) slot(raw string) *atomic.Pointer[hotEntry] {
	return h.slots.String(raw[len(raw)-min(len(raw), hotHashTail):])
}

// get returns the Identity of raw when the slot holds exactly that token,
// verified under key-set generation gen and not past its exp at now.
func (h *hotTokens) get(slot *atomic.Pointer[hotEntry], raw string, now int64, gen uint64) *Identity {
	e := slot.Load()
	if e == nil || e.gen != gen || now >= e.exp || e.id.Raw != raw {
		return nil
	}
	return e.id
}

// put makes id (whose Raw is the token) the slot's token.
func (h *hotTokens) put(slot *atomic.Pointer[hotEntry], id *Identity, exp int64, gen uint64) {
	if len(id.Raw) > hotMaxToken || id.Raw == "" {
		return
	}
	slot.Store(&hotEntry{id: id, exp: exp, gen: gen})
}

// reset empties the table.
func (h *hotTokens) reset() { h.slots.Reset() }
