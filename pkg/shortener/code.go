package shortener

import (
	"fmt"
	"io"
	"strings"
)

// Code lengths.
const (
	// DefaultCodeLength is the length of new codes: 62^7 ≈ 3.5e12 codes,
	// enough not to be enumerable.
	DefaultCodeLength = 7
	// MinCodeLength and MaxCodeLength bound Options.CodeLength and the
	// codes that lookups accept; codes grow up to MaxCodeLength when
	// collisions persist.
	MinCodeLength = 6
	MaxCodeLength = 16

	// MinCustomCodeLength and MaxCustomCodeLength bound the codes that
	// creators choose (Options.CustomCodes), made of [A-Za-z0-9_-].
	MinCustomCodeLength = 3
	MaxCustomCodeLength = 64

	// attemptsPerLength is how many random codes are tried at one length
	// before the length grows by one.
	attemptsPerLength = 4
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// DefaultReserved are the words that can never be codes, because they are
// (or may become) paths of the service, of its metrics listener or of the
// identity proxy in front of it. They are compared case-insensitively.
var DefaultReserved = []string{
	"health", "healthz", "readyz", "livez", "shorten", "metrics", "auth",
	"api", "static", "assets", "admin", "login", "logout", "callback",
	"favicon.ico", "robots.txt", ".well-known", "debug", "version",
	"links", "openapi.json", "openapi", "index.html", "app", "ui", "signed-out",
}

// isBase62 reports whether s is made only of base62 characters.
func isBase62(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}

// isCodeChar reports whether c may appear in a custom code.
func isCodeChar(c byte) bool {
	return '0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || c == '_' || c == '-'
}

// isCustomAlphabet reports whether s is made only of [A-Za-z0-9_-].
func isCustomAlphabet(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isCodeChar(s[i]) {
			return false
		}
	}
	return true
}

// ValidateCustomCode checks a code chosen by its creator: 3 to 64
// characters of [A-Za-z0-9_-], not a reserved word (DefaultReserved and
// reserved, compared ignoring case). It returns nil or an *InputError for
// the field "short_code".
func ValidateCustomCode(code string, reserved ...string) error {
	switch {
	case len(code) < MinCustomCodeLength || len(code) > MaxCustomCodeLength:
		return &InputError{Field: "short_code", Reason: "must be 3 to 64 characters long"}
	case !isCustomAlphabet(code):
		return &InputError{Field: "short_code", Reason: "may only contain letters A-Z and a-z, digits, '_' and '-'"}
	case isReserved(code, DefaultReserved) || isReserved(code, reserved):
		return &InputError{Field: "short_code", Reason: "is a reserved word"}
	}
	return nil
}

// isReserved reports whether code equals one of reserved, ignoring case.
func isReserved(code string, reserved []string) bool {
	for _, w := range reserved {
		if len(w) == len(code) && strings.EqualFold(w, code) {
			return true
		}
	}
	return false
}

// randomCode returns n base62 characters read from r, without modulo bias
// (bytes ≥ 248 are discarded).
func randomCode(r io.Reader, n int) (string, error) {
	out := make([]byte, 0, n)
	var buf [32]byte
	for len(out) < n {
		if _, err := io.ReadFull(r, buf[:]); err != nil {
			return "", fmt.Errorf("shortener: read random bytes: %w", err)
		}
		for _, b := range buf {
			if b >= 248 { // 248 = 4*62
				continue
			}
			out = append(out, base62[b%62])
			if len(out) == n {
				break
			}
		}
	}
	return string(out), nil
}
