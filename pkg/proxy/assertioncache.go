package proxy

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/directmap"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/assert"
)

// assertionCache keeps an upstream's signed assertions by the caller's
// token until shortly before they expire, so that a repeated token costs
// a look-up, not a signature. A direct-mapped table keyed by the
// *idp.TokenPayload (pkg/idp hands the same payload to every request that
// presents a token of its hot-token table) answers first without a lock;
// a bounded map keyed by the token answers the rest.
type assertionCache struct {
	signer   *assert.Signer
	audience string
	prefix   string // "Bearer " when the header is Authorization
	max      int
	hot      directmap.Table[cachedAssertion]

	mu      sync.Mutex
	byToken map[string]*cachedAssertion

	signed atomic.Uint64 // signatures made, for tests and metrics
}

// cachedAssertion is one assertion: the header value, and when it must
// be signed again.
type cachedAssertion struct {
	payload *idp.TokenPayload
	token   string
	value   []string // the header's value, "Bearer " prefixed when it is Authorization; capacity 1
	renew   time.Time
}

const assertionHotSlots = 256

func newAssertionCache(s *assert.Signer, audience, prefix string, max int) *assertionCache {
	return &assertionCache{signer: s, audience: audience, prefix: prefix, max: max,
		hot: directmap.Make[cachedAssertion](assertionHotSlots), byToken: map[string]*cachedAssertion{}}
}

// get returns the assertion of id at now, signing one when none is
// cached or the cached one is close to expiry.
func (c *assertionCache) get(id *idp.Identity, now time.Time) ([]string, error) {
	slot := directmap.Comparable(&c.hot, id.Payload)
	if e := slot.Load(); e != nil && e.payload == id.Payload && e.token == id.Raw && now.Before(e.renew) {
		return e.value, nil
	}
	c.mu.Lock()
	e, ok := c.byToken[id.Raw]
	c.mu.Unlock()
	if ok && now.Before(e.renew) {
		slot.Store(&cachedAssertion{payload: id.Payload, token: e.token, value: e.value, renew: e.renew})
		return e.value, nil
	}
	raw, exp, err := c.signer.Sign(assertionClaims(id, c.audience))
	if err != nil {
		return nil, err
	}
	c.signed.Add(1)
	// Renewed when a quarter of its life is left: an upstream never gets
	// one about to expire.
	e = &cachedAssertion{payload: id.Payload, token: id.Raw, renew: exp.Add(-exp.Sub(now) / 4),
		value: []string{c.prefix + raw}}
	slot.Store(e)
	if c.max > 0 {
		c.mu.Lock()
		if len(c.byToken) >= c.max {
			c.evict(now)
		}
		c.byToken[id.Raw] = e
		c.mu.Unlock()
	}
	return e.value, nil
}

// evict drops the entries due for renewal, and everything when none is
// (the map stays bounded; the hot table keeps the busiest tokens).
func (c *assertionCache) evict(now time.Time) {
	for k, e := range c.byToken {
		if !now.Before(e.renew) {
			delete(c.byToken, k)
		}
	}
	if len(c.byToken) >= c.max {
		clear(c.byToken)
	}
}

// assertionClaims are the claims of id's assertion for audience.
func assertionClaims(id *idp.Identity, audience string) assert.Claims {
	u, p := id.User, id.Payload
	c := assert.Claims{Audience: audience, Subject: u.Sub, Username: u.PreferredUsername,
		Roles: u.RealmRoles, Groups: u.Groups, IssuerName: u.IssuerName}
	if p != nil {
		if p.EmailVerified {
			c.Email = u.Email
		}
		c.Expiry = p.ExpiresAt
		p.Claim("acr", &c.ACR)
		p.Claim("amr", &c.AMR)
		var at int64
		if p.Claim("auth_time", &at) && at > 0 {
			c.AuthTime = time.Unix(at, 0)
		}
	}
	return c
}

// apply makes hdr (stripped, identity set, no token forwarded) carry the
// mode's credential: the caller's token is removed from every header and
// cookie where it may still be (a header the strip list does not know, a
// cookie the proxy does not read), then the assertion is set.
func (c *credential) apply(p *Proxy, hdr http.Header, id *idp.Identity) {
	if id == nil || id.Raw == "" {
		return
	}
	scrubToken(hdr, id.Raw)
	if c.cache == nil || id.User == nil {
		return
	}
	v, err := c.cache.get(id, time.Now())
	if err != nil {
		// Fail closed: the upstream gets no assertion and refuses.
		p.log.Error("signing an assertion failed", "audience", c.audience, "error", err)
		return
	}
	hdr[c.header] = v[:1:1] // shared: an append copies
}

// scrubToken removes every header whose value holds the token, and every
// cookie whose value does.
func scrubToken(hdr http.Header, raw string) {
	for k, vals := range hdr {
		for _, v := range vals {
			if !strings.Contains(v, raw) {
				continue
			}
			if k == "Cookie" {
				stripCookieValues(hdr, raw)
			} else {
				delete(hdr, k)
			}
			break
		}
	}
}

// stripCookieValues removes the cookies whose value holds raw.
func stripCookieValues(hdr http.Header, raw string) {
	var kept []string
	for _, v := range hdr["Cookie"] {
		var parts []string
		for part := range strings.SplitSeq(v, ";") {
			if pair := strings.TrimSpace(part); pair != "" && !strings.Contains(pair, raw) {
				parts = append(parts, pair)
			}
		}
		if len(parts) > 0 {
			kept = append(kept, strings.Join(parts, "; "))
		}
	}
	if len(kept) == 0 {
		delete(hdr, "Cookie")
		return
	}
	hdr["Cookie"] = kept
}
