package dpop

import (
	"math"
	"strconv"
)

// readFlatClaims reads the payload c in one pass when it has the shape
// proofs have: one JSON object of distinct members among jti, htm, htu,
// ath, nonce (strings of printable ASCII without escapes) and iat (a JSON
// number). The claims are substrings of c: no allocation. For anything
// else (another member, an escape, a nested value, a duplicate, a member
// of the wrong type, malformed JSON) it reports false and sets nothing,
// and readClaims reads the payload in full, refusing what it refuses: the
// one-pass reader accepts only payloads that readClaims would read to the
// same claims.
func (p *proofJWS) readFlatClaims(c string) bool {
	const (
		jti = 1 << iota
		htm
		htu
		ath
		nonce
		iat
	)
	var (
		seen     int
		vals     [5]string // jti, htm, htu, ath, nonce
		iatValue float64
	)
	i := skipSpace(c, 0)
	if i == len(c) || c[i] != '{' {
		return false
	}
	i = skipSpace(c, i+1)
	if i < len(c) && c[i] == '}' {
		return skipSpace(c, i+1) == len(c) && p.setFlat(0, vals, 0)
	}
	for {
		name, j, ok := plainString(c, i)
		if !ok {
			return false
		}
		var bit, slot int
		switch name {
		case "jti":
			bit, slot = jti, 0
		case "htm":
			bit, slot = htm, 1
		case "htu":
			bit, slot = htu, 2
		case "ath":
			bit, slot = ath, 3
		case "nonce":
			bit, slot = nonce, 4
		case "iat":
			bit = iat
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		j = skipSpace(c, j)
		if j == len(c) || c[j] != ':' {
			return false
		}
		j = skipSpace(c, j+1)
		if bit == iat {
			end := numberEnd(c, j)
			if end == j {
				return false
			}
			f, err := strconv.ParseFloat(c[j:end], 64)
			if err != nil || math.IsInf(f, 0) {
				return false
			}
			iatValue, j = f, end
		} else {
			var v string
			if v, j, ok = plainString(c, j); !ok {
				return false
			}
			vals[slot] = v
		}
		j = skipSpace(c, j)
		if j == len(c) {
			return false
		}
		switch c[j] {
		case ',':
			i = skipSpace(c, j+1)
		case '}':
			return skipSpace(c, j+1) == len(c) && p.setFlat(seen, vals, iatValue)
		default:
			return false
		}
	}
}

// setFlat stores what readFlatClaims read; it reports true.
func (p *proofJWS) setFlat(seen int, vals [5]string, iat float64) bool {
	p.jti, p.htm, p.htu, p.ath, p.nonce = vals[0], vals[1], vals[2], vals[3], vals[4]
	p.hasATH = seen&(1<<3) != 0
	p.hasNonce = seen&(1<<4) != 0
	p.hasIAT = seen&(1<<5) != 0
	p.iat = iat
	return true
}

func skipSpace(c string, i int) int {
	for i < len(c) && (c[i] == ' ' || c[i] == '\t' || c[i] == '\n' || c[i] == '\r') {
		i++
	}
	return i
}

// plainString reads the JSON string at c[i] when it holds printable
// ASCII only and no escape; it returns its contents and the index after
// its closing quote.
func plainString(c string, i int) (string, int, bool) {
	if i == len(c) || c[i] != '"' {
		return "", i, false
	}
	for j := i + 1; j < len(c); j++ {
		switch b := c[j]; {
		case b == '"':
			return c[i+1 : j], j + 1, true
		case b < 0x20 || b > 0x7e || b == '\\':
			return "", i, false
		}
	}
	return "", i, false
}

// numberEnd returns the end of the JSON number (RFC 8259 §6) at c[i], i
// itself when there is none.
func numberEnd(c string, i int) int {
	j := i
	if j < len(c) && c[j] == '-' {
		j++
	}
	switch {
	case j < len(c) && c[j] == '0':
		j++
	case j < len(c) && '1' <= c[j] && c[j] <= '9':
		j = digitsEnd(c, j)
	default:
		return i
	}
	if j < len(c) && c[j] == '.' {
		k := digitsEnd(c, j+1)
		if k == j+1 {
			return i
		}
		j = k
	}
	if j < len(c) && (c[j] == 'e' || c[j] == 'E') {
		j++
		if j < len(c) && (c[j] == '+' || c[j] == '-') {
			j++
		}
		k := digitsEnd(c, j)
		if k == j {
			return i
		}
		j = k
	}
	return j
}

func digitsEnd(c string, i int) int {
	for i < len(c) && '0' <= c[i] && c[i] <= '9' {
		i++
	}
	return i
}
