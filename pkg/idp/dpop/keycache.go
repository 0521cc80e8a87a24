package dpop

import "github.com/idp-proxy/idp-proxy/internal/directmap"

// keyCache remembers the proof keys whose signatures verified, by their
// JWK as sent, so that a client's next proof skips decoding the key,
// checking its point and hashing its thumbprint (some 24,000
// instructions for a P-256 key, against 250 for a hit: 3 % of an ES256
// Verify). It is direct-mapped: bounded (keyCacheSlots entries: some
// 0.5 MB of P-256 keys, under 3 MB were every one an RSA-8192 key) and lock-free; a collision
// forgets the older key, which is parsed again when it comes back.
type keyCache struct {
	t directmap.Table[cachedKey]
}

type cachedKey struct {
	jwk string // the JWK as sent: a hit must match it byte for byte
	key *publicJWK
}

const keyCacheSlots = 1024

func newKeyCache() *keyCache { return &keyCache{t: directmap.Make[cachedKey](keyCacheSlots)} }

// get returns the key of jwk if it is cached.
func (c *keyCache) get(jwk []byte) *publicJWK {
	if e := c.t.Bytes(jwk).Load(); e != nil && e.jwk == string(jwk) {
		return e.key
	}
	return nil
}

// put caches k as the key of jwk.
func (c *keyCache) put(jwk []byte, k *publicJWK) {
	c.t.Bytes(jwk).Store(&cachedKey{jwk: string(jwk), key: k})
}
