package proxy

import (
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"
)

// requestIDs gives each request an X-Request-Id: the client's when it is
// valid, else a random per-proxy prefix and a sequence number (unique
// without a random read per request).
type requestIDs struct {
	prefix string
	seq    atomic.Uint64
}

// init draws the prefix.
func (g *requestIDs) init() {
	var b [4]byte
	_, _ = rand.Read(b[:])
	g.prefix = hex.EncodeToString(b[:]) + "-"
}

// id returns the client's X-Request-Id when it is one short token of
// [A-Za-z0-9._:-], else a new one.
func (g *requestIDs) id(sent []string) string {
	if len(sent) == 1 && validRequestID(sent[0]) {
		return sent[0]
	}
	var buf [32]byte
	b := append(buf[:0], g.prefix...)
	n := g.seq.Add(1)
	const digits = "0123456789abcdef"
	var tmp [16]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = digits[n&0xf]
		n >>= 4
		if n == 0 {
			break
		}
	}
	b = append(b, tmp[i:]...)
	return string(b)
}

// validRequestID reports whether a client-sent id may be kept.
func validRequestID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}
