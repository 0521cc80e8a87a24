package idp

import (
	"strings"
	"testing"
)

// checkTokenSyntaxRef is RFC 6750's b64token one byte at a time, the
// reference the eight-bytes-a-step checkTokenSyntax must agree with.
func checkTokenSyntaxRef(tok string) bool {
	body := strings.TrimRight(tok, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// FuzzCheckTokenSyntax: checkTokenSyntax accepts exactly the b64token
// strings, whatever the position of a bad byte relative to its 8-byte
// steps (seed corpus in testdata/fuzz/FuzzCheckTokenSyntax).
func FuzzCheckTokenSyntax(f *testing.F) {
	for _, s := range []string{"", "=", "a", "a=", "abcdefgh", "abcdefg=", "abcdefgh=", "abcdefghi", "abcdefg\x00",
		"abc=defgh", "abcdefgh.ijklmnop.qrstuvwx", "eyJhbGciOi.JSUzI1NiJ9.sig==", "abcdefgh\xffabcdefgh", "a b", "~+/-._"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		got, err := checkTokenSyntax(tok)
		want := checkTokenSyntaxRef(tok)
		if (err == nil) != want {
			t.Fatalf("checkTokenSyntax(%q) error = %v, want valid=%v", tok, err, want)
		}
		if err == nil && got != tok {
			t.Fatalf("checkTokenSyntax(%q) = %q", tok, got)
		}
	})
}
