package proxy

import "strings"

// isToken reports whether s is an RFC 9110 token (§5.6.2): the syntax of
// a method and of a header field name, checked by the rules, the CORS
// lists, the header rules and the credential's header alike.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}
