package dpop

import "github.com/idp-proxy/idp-proxy/internal/directmap"

// headerCache remembers the JOSE headers of proofs whose signatures
// verified, by their base64url form as sent, with the key parsed from
// their jwk. A client sends the same header with every proof, so its
// next proof skips decoding the header, scanning its JSON, decoding the
// key, checking its point and hashing its thumbprint: for a P-256 key
// some 35,000 instructions (4 % of an ES256 Verify), for an RSA-2048 key
// some 60,000 (10 % of an RS256 Verify), against a few hundred for a
// hit. A hit must match the header byte for byte, so it stands for what
// parsing that header would give.
//
// It is direct-mapped: bounded (headerCacheSlots entries: some 0.5 MB of
// P-256 headers, under 4 MB were every one an RSA-8192 key) and
// lock-free; a collision forgets the older header, which is parsed again
// when it comes back.
type headerCache struct {
	t directmap.Table[cachedHeader]
}

type cachedHeader struct {
	segment  string // the header as sent, base64url
	alg, typ string
	key      *publicJWK
}

const headerCacheSlots = 1024

func newHeaderCache() *headerCache {
	return &headerCache{t: directmap.Make[cachedHeader](headerCacheSlots)}
}

// get returns the cached header whose base64url form is segment.
func (c *headerCache) get(segment string) *cachedHeader {
	if e := c.t.String(segment).Load(); e != nil && e.segment == segment {
		return e
	}
	return nil
}

// put caches h.
func (c *headerCache) put(h *cachedHeader) { c.t.String(h.segment).Store(h) }
