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
	u      *idp.User
	p      *idp.TokenPayload
	vals   [4]string // user, preferred username, email ("" unless verified), roles
	claims []string  // the claim headers', in headerRules.claims order
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

// values returns the header values of id (whose User and Payload were
// verified together), the claim headers' included.
func (m *identityMemo) values(id *idp.Identity, claims []claimHeader) *identityValues {
	u := id.User
	slot := directmap.Comparable(&m.slots, u)
	if v := slot.Load(); v != nil && v.u == u && v.p == id.Payload {
		return v
	}
	v := &identityValues{u: u, p: id.Payload}
	v.vals[0] = headerValue(u.Sub)
	v.vals[1] = headerValue(u.PreferredUsername)
	if id.Payload != nil && id.Payload.EmailVerified {
		v.vals[2] = headerValue(u.Email)
	}
	if len(u.RealmRoles) > 0 {
		v.vals[3] = joinRoles(u.RealmRoles)
	}
	if len(claims) > 0 && id.Payload != nil {
		v.claims = make([]string, len(claims))
		for i, c := range claims {
			v.claims[i] = claimHeaderValue(id.Payload, c.path)
		}
	}
	slot.Store(v)
	return v
}
