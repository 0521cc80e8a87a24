package dpop

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"sync/atomic"
	"time"
)

// Server nonces (RFC 9449 §9) without state: the nonce of period k (time
// divided into periods of half the lifetime) is base64url(k || MAC(k)),
// MAC a truncated HMAC-SHA256 under the shared secret. Any replica with
// the secret recognises a nonce another made; none has to store one. A
// nonce of period k is accepted from the start of k (less the leeway, for
// a replica whose clock runs ahead) until a lifetime after that start, so
// a nonce handed out at any moment stays good for at least half the
// lifetime. Nonces are not single-use: the jti replay cache already
// refuses a proof twice; the nonce bounds how long a client may prepare
// proofs in advance (§11.2).

const nonceMACLen = 16

// nonceLabel separates these MACs from any other use of the secret.
const nonceLabel = "idp-proxy dpop nonce v1\x00"

type nonces struct {
	secret   []byte
	half     time.Duration
	lifetime time.Duration
	// set caches the nonces of the periods around the current one, so
	// that a check is a comparison, not an HMAC.
	set atomic.Pointer[nonceSet]
}

type nonceSet struct {
	period int64
	// values[i] is the nonce of period period-1+i.
	values [3]string
}

func newNonces(secret []byte, lifetime time.Duration) *nonces {
	return &nonces{secret: secret, half: lifetime / 2, lifetime: lifetime}
}

func (n *nonces) make(period int64) string {
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], uint64(period))
	mac := hmac.New(sha256.New, n.secret)
	mac.Write([]byte(nonceLabel))
	mac.Write(msg[:])
	out := append(msg[:], mac.Sum(nil)[:nonceMACLen]...)
	return base64.RawURLEncoding.EncodeToString(out)
}

func (n *nonces) periodOf(t time.Time) int64 {
	return t.UnixNano() / int64(n.half)
}

// around returns the nonces of the period of now and its neighbours.
func (n *nonces) around(now time.Time) *nonceSet {
	p := n.periodOf(now)
	if s := n.set.Load(); s != nil && s.period == p {
		return s
	}
	s := &nonceSet{period: p, values: [3]string{n.make(p - 1), n.make(p), n.make(p + 1)}}
	n.set.Store(s)
	return s
}

// current returns the nonce of the period of now.
func (n *nonces) current(now time.Time) string { return n.around(now).values[1] }

// valid reports whether nonce is accepted at now: the nonce of the
// current period or of the one before (so at most a lifetime old), or of
// the next one if it starts within leeway (a replica whose clock runs a
// little ahead made it).
func (n *nonces) valid(nonce string, now time.Time, leeway time.Duration) bool {
	s := n.around(now)
	for i, v := range s.values {
		if len(nonce) != len(v) || subtle.ConstantTimeCompare([]byte(nonce), []byte(v)) != 1 {
			continue
		}
		if i < 2 {
			return true
		}
		next := time.Unix(0, (s.period+1)*int64(n.half))
		return !next.After(now.Add(leeway))
	}
	return false
}
