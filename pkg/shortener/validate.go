package shortener

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
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
// relative references, is rejected. ValidateURL does not rewrite the URL;
// NormalizeURL gives the form that is stored.
func ValidateURL(raw string) error {
	_, err := NormalizeURL(raw)
	return err
}

// NormalizeURL validates raw as ValidateURL describes and returns the URL
// to store and answer in Location, in ASCII: an internationalised host is
// converted to its IDNA A-label form (punycode, UTS #46 lookup rules;
// a host IDNA refuses is an *InvalidURLError), and any other non-ASCII
// byte (path, query, fragment) is percent-encoded, as browsers send it. An
// ASCII URL is returned byte for byte.
func NormalizeURL(raw string) (string, error) {
	if err := validateURL(raw); err != nil {
		return "", err
	}
	if isASCII(raw) {
		return raw, nil
	}
	u, _ := url.Parse(raw) // validated
	host := u.Hostname()
	if !isASCII(host) {
		ascii, err := idnaProfile.ToASCII(host)
		if err != nil || ascii == "" {
			return "", &InvalidURLError{Reason: "url host is not a valid internationalised domain name"}
		}
		// Replace the host in raw itself, leaving the rest as written.
		i := strings.Index(raw, "//") + 2
		j := i + len(u.Host)
		if raw[i:j] != u.Host {
			return "", &InvalidURLError{Reason: "url cannot be parsed"}
		}
		port := u.Port()
		if port != "" {
			port = ":" + port
		}
		raw = raw[:i] + ascii + port + raw[j:]
	}
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c >= utf8.RuneSelf {
			b.WriteByte('%')
			b.WriteByte("0123456789ABCDEF"[c>>4])
			b.WriteByte("0123456789ABCDEF"[c&0xf])
		} else {
			b.WriteByte(c)
		}
	}
	out := b.String()
	if len(out) > MaxURLLength {
		return "", &InvalidURLError{Reason: "url is longer than 2048 bytes once encoded in ASCII"}
	}
	return out, nil
}

// idnaProfile converts hosts for storage: UTS #46 lookup mapping, strict
// label and bidi rules, no transitional mapping (ß stays ß, as browsers
// do since 2017).
var idnaProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.ValidateLabels(true),
	idna.StrictDomainName(true),
	idna.Transitional(false),
)

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func validateURL(raw string) error {
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
