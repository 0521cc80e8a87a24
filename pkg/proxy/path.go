package proxy

import (
	"net/url"
	"strings"
	"unicode/utf8"
)

// checkPath checks the escaped path of a request (url.URL.EscapedPath)
// and returns "" when it is unambiguous, or the reason it is rejected.
//
// The proxy never normalises paths: a path is accepted only when every
// reasonable server decodes it to the same thing the rules judged, and it
// is then forwarded byte for byte. Rejected (400):
//
//   - anything not starting with "/" (including "*" and empty paths);
//   - empty segments ("//"), and "." or ".." segments, also percent-encoded
//     ("%2e", "%2E%2e");
//   - encoded slashes and backslashes ("%2F", "%5C"), literal backslashes;
//   - ";" and "%3B" (path parameters, which servlet containers strip);
//   - "%25" (an encoded "%", the door to double decoding);
//   - control characters, raw or encoded (NUL, CR, LF, TAB, DEL, ...);
//   - bytes outside ASCII that are not percent-encoded;
//   - malformed percent-encoding ("%", "%4", "%zz");
//   - encoded bytes that do not decode to UTF-8, overlong forms included
//     ("%C0%AE" is a '.' to some decoders, a byte pair to the rules).
//
// Encoded bytes outside that list, "%C3%A9" for example, are fine: the
// path is matched decoded and forwarded encoded, as received.
func checkPath(p string) string {
	if p == "" || p[0] != '/' {
		return "the path must start with '/'"
	}
	segLen, segDots := 0, 0 // decoded length of the current segment, and how many of its bytes are '.'
	high := false           // an encoded byte >= 0x80 was seen
	endSegment := func() string {
		if segLen > 0 && segLen == segDots && segLen <= 2 {
			return "dot segments ('.' or '..') are not allowed in paths"
		}
		return ""
	}
	for i := 1; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '/':
			if segLen == 0 {
				return "empty path segments ('//') are not allowed"
			}
			if r := endSegment(); r != "" {
				return r
			}
			segLen, segDots = 0, 0
			continue
		case c == '%':
			if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
				return "malformed percent-encoding in the path"
			}
			d := unhex(p[i+1])<<4 | unhex(p[i+2])
			i += 2
			switch {
			case d == '/':
				return "encoded slashes ('%2F') are not allowed in paths"
			case d == '\\':
				return "encoded backslashes ('%5C') are not allowed in paths"
			case d == ';':
				return "encoded semicolons ('%3B') are not allowed in paths"
			case d == '%':
				return "encoded percent signs ('%25') are not allowed in paths"
			case d < 0x20 || d == 0x7f:
				return "control characters are not allowed in paths"
			}
			high = high || d >= 0x80
			c = d
		case c == '\\':
			return "backslashes are not allowed in paths"
		case c == ';':
			return "';' path parameters are not allowed"
		case c < 0x20 || c == 0x7f:
			return "control characters are not allowed in paths"
		case c >= 0x80:
			return "bytes outside ASCII must be percent-encoded in paths"
		}
		segLen++
		if c == '.' {
			segDots++
		}
	}
	if high {
		if dec, err := url.PathUnescape(p); err != nil || !utf8.ValidString(dec) {
			return "encoded bytes in the path must be UTF-8"
		}
	}
	return endSegment()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// upperCase reports whether s has no lower-case ASCII letter.
func upperCase(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'a' <= s[i] && s[i] <= 'z' {
			return false
		}
	}
	return true
}

// canonicalHost lower-cases the host name of a Host value and drops the
// trailing dots of a fully qualified name ("API.Example.com.:8080" is
// "api.example.com:8080"); it returns h itself when there is nothing to do.
func canonicalHost(h string) string {
	name, port := h, ""
	if i := strings.LastIndexByte(h, ':'); i > strings.LastIndexByte(h, ']') {
		name, port = h[:i], h[i:]
	}
	if upperCaseFree(name) && !strings.HasSuffix(name, ".") {
		return h
	}
	name = strings.TrimRight(strings.ToLower(name), ".")
	return name + port
}

// lowerPatternHost lower-cases the host of a ServeMux pattern
// "[METHOD ][HOST]/PATH", keeping its method and path as written.
func lowerPatternHost(pattern string) string {
	h := patternHost(pattern)
	if h == "" || upperCaseFree(h) {
		return pattern
	}
	j := strings.IndexByte(pattern, '/') // the host ends where the path starts
	return pattern[:j-len(h)] + strings.ToLower(h) + pattern[j:]
}

// upperCaseFree reports whether s has no upper-case ASCII letter.
func upperCaseFree(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return false
		}
	}
	return true
}
