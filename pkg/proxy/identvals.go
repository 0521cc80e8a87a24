package proxy

import (
	"github.com/idp-proxy/idp-proxy/internal/directmap"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// identityValues are the identity header values of one verified user
// (encoded, roles joined), computed once. pkg/idp hands the same *idp.User
// to every request that presents a token it answers from its hot-token
// table, so those requests share the values instead of rebuilding them.
// Each header gets a one-element slice of the array with capacity 1: an
// append to it copies, and nothing writes into a request's header values
// in place, so a request never changes another's.
type identityValues struct {
	u             *idp.User
	emailVerified bool
	vals          [4]string // user, preferred username, email ("" unless verified), roles
}

// identityMemo is a direct-mapped table of identityValues keyed by the
// *idp.User: bounded (a slot keeps the last user hashed to it), without
// locks. A User is never modified once verified (see idp.Identity), so
// values computed for a pointer stay right for as long as it is used.
type identityMemo struct {
	slots directmap.Table[identityValues]
}

const identityMemoSlots = 256

func newIdentityMemo() *identityMemo {
	return &identityMemo{slots: directmap.Make[identityValues](identityMemoSlots)}
}

// values returns u's header values.
func (m *identityMemo) values(u *idp.User, emailVerified bool) *identityValues {
	slot := directmap.Comparable(&m.slots, u)
	if v := slot.Load(); v != nil && v.u == u && v.emailVerified == emailVerified {
		return v
	}
	v := &identityValues{u: u, emailVerified: emailVerified}
	v.vals[0] = headerValue(u.Sub)
	v.vals[1] = headerValue(u.PreferredUsername)
	if emailVerified {
		v.vals[2] = headerValue(u.Email)
	}
	if len(u.RealmRoles) > 0 {
		v.vals[3] = joinRoles(u.RealmRoles)
	}
	slot.Store(v)
	return v
}
