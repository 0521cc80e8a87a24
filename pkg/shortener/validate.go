package shortener

import (
	"net/url"
	"unicode"
	"unicode/utf8"
)

// MaxURLLength is the maximum length of a URL, in bytes.
const MaxURLLength = 2048

// ValidateURL checks raw against the input rules and returns nil or an
// *InvalidURLError (matching ErrInvalidURL) with the reason:
//
//   - at most MaxURLLength bytes of valid UTF-8;
//   - no whitespace, no control characters (C0, DEL, C1), no Unicode format
//     characters (bidi overrides, zero-width characters: they make a link
//     look like another) and no backslash (browsers read it as "/", so the
//     host they visit could differ from the one we checked);
//   - absolute, scheme http or https (any case), with a non-empty host and
//     no user-info ("https://user@host" is a classic phishing disguise).
//
// Everything else, including javascript:, data:, file:, mailto: and
// relative references, is rejected. The URL is never rewritten: callers
// store raw itself, byte for byte.
func ValidateURL(raw string) error {
	if raw == "" {
		return &InvalidURLError{Reason: "url is empty"}
	}
	if len(raw) > MaxURLLength {
		return &InvalidURLError{Reason: "url is longer than 2048 bytes"}
	}
	for i := 0; i < len(raw); {
		c := raw[i]
		if c < utf8.RuneSelf {
			switch {
			case c <= ' ' || c == 0x7f:
				return &InvalidURLError{Reason: "url contains whitespace or control characters"}
			case c == '\\':
				return &InvalidURLError{Reason: "url contains a backslash"}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(raw[i:])
		if r == utf8.RuneError && size == 1 {
			return &InvalidURLError{Reason: "url is not valid UTF-8"}
		}
		if unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return &InvalidURLError{Reason: "url contains whitespace or control characters"}
		}
		i += size
	}
	u, err := url.Parse(raw)
	if err != nil {
		return &InvalidURLError{Reason: "url cannot be parsed"}
	}
	if u.Scheme == "" {
		return &InvalidURLError{Reason: "url must be absolute (http:// or https://)"}
	}
	if u.Scheme != "http" && u.Scheme != "https" { // url.Parse lowercases the scheme
		return &InvalidURLError{Reason: "url scheme must be http or https"}
	}
	if u.Opaque != "" {
		return &InvalidURLError{Reason: "url must be of the form http(s)://host/..."}
	}
	if u.User != nil {
		return &InvalidURLError{Reason: "url must not contain user information"}
	}
	if u.Hostname() == "" {
		return &InvalidURLError{Reason: "url must have a host"}
	}
	return nil
}
