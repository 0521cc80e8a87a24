package shortener

import (
	"mime"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"
)

// CallerOf returns the identity of the request, as HandlerOptions.Owner,
// Roles and AdminRoles make it.
func (h *Handler) CallerOf(r *http.Request) Caller {
	var c Caller
	if h.owner != nil {
		c.ID = h.owner(r)
	}
	if c.ID != "" && h.roles != nil && len(h.adminRoles) > 0 {
		for _, role := range h.roles(r) {
			if slices.Contains(h.adminRoles, role) {
				c.Admin = true
				break
			}
		}
	}
	return c
}

// RolesFromHeader returns a HandlerOptions.Roles hook that reads comma-separated
// roles from the request header name (e.g. "X-Auth-Request-Roles", set by
// idp-proxy). The same security note as OwnerFromHeader applies: only
// behind a proxy that sets the header and strips client copies. A header
// present more than once, longer than 4 KiB, not valid UTF-8 or holding
// control characters gives no roles.
func RolesFromHeader(name string) func(*http.Request) []string {
	key := http.CanonicalHeaderKey(name)
	return func(r *http.Request) []string {
		vs := r.Header[key]
		if len(vs) != 1 || len(vs[0]) > 4096 || !cleanHeaderValue(vs[0]) {
			return nil
		}
		var roles []string
		for role := range strings.SplitSeq(vs[0], ",") {
			if role = strings.TrimSpace(role); role != "" {
				roles = append(roles, role)
			}
		}
		return roles
	}
}

// cleanHeaderValue reports whether v is valid UTF-8 without control
// characters.
func cleanHeaderValue(v string) bool {
	if !utf8.ValidString(v) {
		return false
	}
	for _, c := range v {
		if c < ' ' || c == 0x7f || (c >= 0x80 && c < 0xa0) {
			return false
		}
	}
	return true
}

// maxOwnerLength bounds identities read from headers.
const maxOwnerLength = 256

// OwnerFromHeader returns a HandlerOptions.Owner hook that reads the identity from
// the request header name (e.g. "X-Auth-Request-User", set by idp-proxy).
//
// Security: any client can send that header. Use this only when every
// request reaches the service through a proxy that strips client copies of
// the header and sets it from a verified token. Values longer than 256
// bytes, not valid UTF-8 or holding control characters are ignored
// (recorded as no owner).
func OwnerFromHeader(name string) func(*http.Request) string {
	key := http.CanonicalHeaderKey(name)
	return func(r *http.Request) string {
		vs := r.Header[key]
		if len(vs) != 1 { // absent, or ambiguous
			return ""
		}
		v := strings.TrimSpace(vs[0])
		if len(v) > maxOwnerLength || !cleanHeaderValue(v) {
			return ""
		}
		return v
	}
}

// NameFromHeader returns a HandlerOptions.DisplayName hook that reads a
// display name from the request header name (e.g.
// "X-Auth-Request-Preferred-Username", set by idp-proxy), decoding an RFC
// 2047 encoded-word (idp-proxy sends a value that HTTP would alter, such
// as one with non-ASCII letters, as =?UTF-8?B?...?=). The same security
// note as OwnerFromHeader applies. A header present more than once, longer
// than 256 bytes once decoded, not valid UTF-8 or holding control
// characters gives "".
func NameFromHeader(name string) func(*http.Request) string {
	key := http.CanonicalHeaderKey(name)
	var dec mime.WordDecoder
	return func(r *http.Request) string {
		vs := r.Header[key]
		if len(vs) != 1 || len(vs[0]) > 4*maxOwnerLength {
			return ""
		}
		v := vs[0]
		if strings.HasPrefix(v, "=?") {
			d, err := dec.Decode(v)
			if err != nil {
				return ""
			}
			v = d
		}
		v = strings.TrimSpace(v)
		if len(v) > maxOwnerLength || !cleanHeaderValue(v) {
			return ""
		}
		return v
	}
}
