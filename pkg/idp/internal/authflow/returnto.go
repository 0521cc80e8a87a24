package authflow

import (
	"net/url"
	"strings"
	"unicode/utf8"
)

// maxReturnTo bounds the length of a return-to target.
const maxReturnTo = 2048

// safeReturnTo accepts s as a return-to target only when it is a relative
// path on this site: it starts with a single "/", and neither it nor any of
// its percent-decoded forms starts with "//" or "/\", contains a backslash,
// a control character, a dot segment ("/./", "/../") or a scheme. Browsers
// read "//evil.example" and "/\evil.example" as another host, and some
// servers and frameworks decode a path once more before redirecting, so
// "/%2F%2Fevil.example" is refused as well. It returns s unchanged when
// safe.
func safeReturnTo(s string) (string, bool) {
	if s == "" || len(s) > maxReturnTo || s[0] != '/' {
		return "", false
	}
	if _, err := url.PathUnescape(s); err != nil {
		return "", false // malformed escapes: refuse rather than guess
	}
	cur := s
	for level := 0; ; level++ {
		if !safePathForm(cur) {
			return "", false
		}
		dec, err := url.PathUnescape(cur)
		if err != nil || dec == cur {
			break // no further level of encoding
		}
		if level == 3 {
			return "", false // more than three levels: no legitimate path needs that
		}
		cur = dec
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
		return "", false
	}
	return s, true
}

// safePathForm checks one (possibly decoded) form of a return-to target.
func safePathForm(s string) bool {
	if len(s) == 0 || s[0] != '/' {
		return false
	}
	if len(s) > 1 && (s[1] == '/' || s[1] == '\\') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
	}
	if !utf8.ValidString(s) {
		return false
	}
	// Dot segments in the path part: "/.//evil" normalises to "//evil".
	p, _, _ := strings.Cut(s, "?")
	p, _, _ = strings.Cut(p, "#")
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}
