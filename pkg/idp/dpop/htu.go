package dpop

import (
	"errors"
	"strconv"
	"strings"
)

// NormalizeHTU returns the form of an absolute http or https URI under
// which RFC 9449 §4.3 compares htu with the request's URI: RFC 3986
// §6.2.2 syntax-based normalisation (scheme and host in lower case,
// percent-encodings in upper case, percent-encoded unreserved characters
// decoded, dot segments removed) and §6.2.3 scheme-based normalisation
// (the default port and an empty port removed, an empty path made "/"),
// with the query and the fragment dropped (RFC 9449 §4.2).
//
// It is strict rather than forgiving: a URI that is not absolute
// http(s), that has user information, a percent-encoded or empty host, or
// a character RFC 3986 does not allow in the authority or the path (a
// space, a non-ASCII byte, a malformed percent-encoding) is an error.
// The query and the fragment are dropped unread.
func NormalizeHTU(uri string) (string, error) {
	if i := strings.IndexAny(uri, "?#"); i >= 0 {
		uri = uri[:i]
	}
	colon := strings.IndexByte(uri, ':')
	if colon <= 0 || !strings.HasPrefix(uri[colon+1:], "//") {
		return "", errHTU("not an absolute URI")
	}
	scheme, defaultPort := uri[:colon], ""
	switch {
	case strings.EqualFold(scheme, "https"):
		scheme, defaultPort = "https", "443"
	case strings.EqualFold(scheme, "http"):
		scheme, defaultPort = "http", "80"
	default:
		return "", errHTU("scheme is not http or https")
	}
	rest := uri[colon+3:]
	authority, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	host, port, err := splitAuthority(authority)
	if err != nil {
		return "", err
	}
	if port == defaultPort {
		port = ""
	}
	path, err = normalizePath(path)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.Grow(len(scheme) + 3 + len(host) + 6 + len(path))
	b.WriteString(scheme)
	b.WriteString("://")
	b.WriteString(host)
	if port != "" {
		b.WriteByte(':')
		b.WriteString(port)
	}
	b.WriteString(path)
	return b.String(), nil
}

func errHTU(reason string) error { return errors.New("dpop: URI " + reason) }

// splitAuthority returns the host in lower case and the port in canonical
// decimal ("" when absent or empty).
func splitAuthority(a string) (host, port string, err error) {
	if strings.IndexByte(a, '@') >= 0 {
		return "", "", errHTU("has user information")
	}
	hostEnd := len(a)
	if strings.HasPrefix(a, "[") {
		end := strings.IndexByte(a, ']')
		if end < 0 {
			return "", "", errHTU("has a malformed IP literal")
		}
		for i := 1; i < end; i++ {
			if c := a[i]; !(isHex(c) || c == ':' || c == '.') {
				return "", "", errHTU("has a malformed IP literal")
			}
		}
		hostEnd = end + 1
		if hostEnd < len(a) && a[hostEnd] != ':' {
			return "", "", errHTU("has a malformed authority")
		}
	} else if i := strings.LastIndexByte(a, ':'); i >= 0 {
		hostEnd = i
	}
	host = a[:hostEnd]
	if host == "" {
		return "", "", errHTU("has no host")
	}
	if host[0] != '[' {
		for i := 0; i < len(host); i++ {
			if c := host[i]; !isUnreserved(c) && !isSubDelim(c) {
				return "", "", errHTU("has a character not allowed in a host")
			}
		}
	}
	if hostEnd < len(a) {
		port = a[hostEnd+1:]
		if port != "" {
			if len(port) > 5 {
				return "", "", errHTU("has a malformed port")
			}
			n, err := strconv.Atoi(port)
			if err != nil || n > 65535 || port[0] == '+' || port[0] == '-' {
				return "", "", errHTU("has a malformed port")
			}
			port = strconv.Itoa(n)
		}
	}
	return lower(host), port, nil
}

// normalizePath normalises percent-encodings (upper-case hex, unreserved
// characters decoded), then removes dot segments (RFC 3986 §5.2.4); an
// empty path becomes "/".
func normalizePath(p string) (string, error) {
	if p == "" {
		return "/", nil
	}
	clean := true // the common case: nothing to rewrite
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '%':
			if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
				return "", errHTU("has a malformed percent-encoding")
			}
			clean = false
		case c == '.':
			if (i == 0 || p[i-1] == '/') && (i+1 == len(p) || p[i+1] == '/' || p[i+1] == '.') {
				clean = false
			}
		case isUnreserved(c) || isSubDelim(c) || c == ':' || c == '@' || c == '/':
		default:
			return "", errHTU("has a character not allowed in a path")
		}
	}
	if clean {
		return p, nil
	}
	var b strings.Builder
	b.Grow(len(p))
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		d := unhex(p[i+1])<<4 | unhex(p[i+2])
		if isUnreserved(d) {
			b.WriteByte(d)
		} else {
			b.WriteByte('%')
			b.WriteByte(upper(p[i+1]))
			b.WriteByte(upper(p[i+2]))
		}
		i += 2
	}
	return removeDotSegments(b.String()), nil
}

// removeDotSegments is RFC 3986 §5.2.4 for an absolute path.
func removeDotSegments(in string) string {
	out := make([]string, 0, strings.Count(in, "/"))
	segs := strings.Split(in[1:], "/")
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

func isSubDelim(c byte) bool {
	return strings.IndexByte("!$&'()*+,;=", c) >= 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

// lower returns s in ASCII lower case, s itself when it is already.
func lower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}
