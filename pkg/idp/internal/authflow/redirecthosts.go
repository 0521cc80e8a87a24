package authflow

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// Redirect targets on other hosts: with idp.Config.AllowedRedirectHosts, the
// return_to (and rd) of the login route may be an absolute URL on one of
// the hosts of a set of apps that share one sign-in, not only a path on
// the site itself. Everything that is not plainly such a URL is refused:
// the known open-redirect bypasses hide another host in a string that
// some parser reads as a path or as an allowed host.

// RedirectHosts is the compiled idp.Config.AllowedRedirectHosts.
type RedirectHosts struct {
	exact    map[string]struct{} // "host" or "host:port"; "host:*" any port
	suffixes []hostSuffix        // "*.example.com"
}

// hostSuffix is one "*.example.com[:port]" entry: any host that ends with
// suffix (".example.com") and has at least one label in front of it.
type hostSuffix struct {
	suffix string // ".example.com"
	port   string // "" none (the scheme's default), "*" any, else digits
}

// errRedirectHost wraps the problems of one allowed_redirect_hosts entry.
var errRedirectHost = errors.New("allowed_redirect_hosts")

// CompileRedirectHosts compiles the entries of idp.Config.AllowedRedirectHosts:
// exact host names ("app.example.com", "app.example.com:8443",
// "app.example.com:*" for any port) and suffix patterns ("*.example.com":
// every subdomain, at any depth, not example.com itself). An entry that
// can never match a URL a browser sends (a trailing dot, a scheme or a
// path, non-ASCII letters, "*" anywhere but as the whole first label, an
// empty label) and a pattern over a public suffix ("*.com", "*.co.uk",
// "*.github.io": anyone can register a host under it) are errors.
func CompileRedirectHosts(entries []string) (*RedirectHosts, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	h := &RedirectHosts{exact: make(map[string]struct{}, len(entries))}
	var errs []error
	for _, e := range entries {
		host, port, err := parseHostEntry(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %q: %w", errRedirectHost, e, err))
			continue
		}
		if rest, ok := strings.CutPrefix(host, "*."); ok {
			if ps, _ := publicsuffix.PublicSuffix(rest); ps == rest {
				errs = append(errs, fmt.Errorf("%w: %q: %q is a public suffix (anyone can register a host under it); name your own domain, e.g. *.example.%s", errRedirectHost, e, rest, rest))
				continue
			}
			h.suffixes = append(h.suffixes, hostSuffix{suffix: host[1:], port: port})
			continue
		}
		if port != "" {
			host += ":" + port
		}
		h.exact[host] = struct{}{}
	}
	return h, errors.Join(errs...)
}

// parseHostEntry splits an allowed_redirect_hosts entry into its lower-case
// host (with a leading "*." for a suffix pattern) and its port ("", "*" or
// 1-65535).
func parseHostEntry(e string) (host, port string, err error) {
	switch {
	case e == "":
		return "", "", errors.New("empty")
	case strings.Contains(e, "://") || strings.ContainsAny(e, "/?#@\\"):
		return "", "", errors.New("want a host name (app.example.com) or a pattern (*.example.com), not a URL")
	case strings.HasPrefix(e, "."):
		return "", "", errors.New("a leading dot is oauth2-proxy's spelling: write *.example.com for the subdomains (and example.com for the domain itself)")
	case strings.HasPrefix(e, "["):
		return "", "", errors.New("IPv6 literals are not supported")
	}
	host = e
	if i := strings.LastIndexByte(e, ':'); i >= 0 {
		host, port = e[:i], e[i+1:]
		if port != "*" {
			n, perr := strconv.Atoi(port)
			if perr != nil || n < 1 || n > 65535 || port[0] == '0' {
				return "", "", fmt.Errorf("port %q: want 1-65535 or *", port)
			}
		}
	}
	host = strings.ToLower(host)
	name, wildcard := strings.CutPrefix(host, "*.")
	if strings.Contains(name, "*") {
		return "", "", errors.New("'*' may only be the whole first label (*.example.com)")
	}
	if err := checkHostName(name); err != nil {
		return "", "", err
	}
	if wildcard && !strings.Contains(name, ".") {
		return "", "", fmt.Errorf("%q is a top-level domain: name your own domain, e.g. *.example.%s", name, name)
	}
	return host, port, nil
}

// checkHostName checks a lower-case DNS host name as a URL carries it:
// ASCII letters, digits and hyphens in labels of 1 to 63 bytes, none
// starting or ending with a hyphen, at most 253 bytes, no trailing dot.
func checkHostName(s string) error {
	if s == "" {
		return errors.New("empty host")
	}
	if len(s) > 253 {
		return errors.New("longer than 253 bytes")
	}
	if strings.HasSuffix(s, ".") {
		return errors.New("a trailing dot never matches: browsers keep it in the URL's host")
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" {
			return errors.New("an empty label (two dots in a row)")
		}
		if len(label) > 63 {
			return fmt.Errorf("label %q is longer than 63 bytes", label)
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("label %q starts or ends with a hyphen", label)
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			switch {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-':
			case c >= 0x80:
				return errors.New("non-ASCII letters: write an internationalised name in its xn-- form, as URLs carry it")
			default:
				return fmt.Errorf("%q is not a letter, digit or hyphen", string(c))
			}
		}
	}
	return nil
}

// allows reports whether host ("a.example.com", lower case, checked by
// checkHostName) with port ("" for the scheme's default) is allowed.
func (h *RedirectHosts) allows(host, port string) bool {
	if h == nil {
		return false
	}
	key := host
	if port != "" {
		key += ":" + port
	}
	if _, ok := h.exact[key]; ok {
		return true
	}
	if _, ok := h.exact[host+":*"]; ok {
		return true
	}
	for _, s := range h.suffixes {
		if len(host) > len(s.suffix) && strings.HasSuffix(host, s.suffix) && (s.port == port || s.port == "*") {
			return true
		}
	}
	return false
}

// origins returns the origins of the exact hosts ("https://host[:port]",
// and "http://..." unless httpsOnly), for the cross-origin check of
// unsafe requests; entries with any port and suffix patterns have none.
func (h *RedirectHosts) Origins(httpsOnly bool) []string {
	if h == nil {
		return nil
	}
	var out []string
	for k := range h.exact {
		if strings.HasSuffix(k, ":*") {
			continue
		}
		out = append(out, "https://"+k)
		if !httpsOnly {
			out = append(out, "http://"+k)
		}
	}
	return out
}

// target judges an absolute return-to URL: it must be http(s)
// ("https" when httpsOnly), written in ASCII without a control
// character, space or backslash anywhere, without user info or fragment,
// its host a plain DNS name (no percent-encoding, no empty label, no
// trailing dot) on an allowed host, its port (the scheme's default port
// counts as none) the allowed one, and its path and query a safe
// return-to path (safeReturnTo). It returns the URL with the scheme and
// host in lower case, the default port dropped, and the path and query as
// sent.
func (h *RedirectHosts) target(s string, httpsOnly bool) (string, bool) {
	if h == nil || s == "" || len(s) > maxReturnTo {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return "", false
		}
	}
	var scheme, rest string
	switch {
	case len(s) > 8 && strings.EqualFold(s[:8], "https://"):
		scheme, rest = "https", s[8:]
	case len(s) > 7 && strings.EqualFold(s[:7], "http://") && !httpsOnly:
		scheme, rest = "http", s[7:]
	default:
		return "", false
	}
	authority, uri := rest, "/"
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, uri = rest[:i], rest[i:]
	}
	if strings.ContainsAny(authority, "@%[]") || strings.ContainsRune(uri, '#') {
		return "", false
	}
	if uri[0] == '?' {
		uri = "/" + uri
	}
	host, port := strings.ToLower(authority), ""
	if i := strings.IndexByte(host, ':'); i >= 0 {
		host, port = host[:i], host[i+1:]
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return "", false
		}
		if scheme == "https" && port == "443" || scheme == "http" && port == "80" {
			port = ""
		}
	}
	if checkHostName(host) != nil || !h.allows(host, port) {
		return "", false
	}
	if _, ok := safeReturnTo(uri); !ok {
		return "", false
	}
	// The standard parser must read the same host: no difference between
	// what was judged and what a browser follows.
	u, err := url.Parse(s)
	if err != nil || u.User != nil || u.Opaque != "" || !strings.EqualFold(u.Hostname(), host) {
		return "", false
	}
	out := scheme + "://" + host
	if port != "" {
		out += ":" + port
	}
	return out + uri, true
}

// CheckCookieDomain checks a session cookie domain (lower case, without
// a leading dot) against the callback URL: a DNS name that is not a public
// suffix, an https callback (the cookie is __Secure-), and a callback host
// the domain covers (else the callback could not set the cookie).
func CheckCookieDomain(domain, redirectURI string) error {
	if err := checkHostName(domain); err != nil {
		return err
	}
	if ps, _ := publicsuffix.PublicSuffix(domain); ps == domain {
		return errors.New("a public suffix (every site under it would get the cookie); name your own domain")
	}
	u, err := url.Parse(redirectURI)
	if err != nil || u.Host == "" {
		return nil // reported as redirect_uri's problem
	}
	if u.Scheme != "https" {
		return errors.New("needs an https redirect_uri: a cookie shared across hosts is __Secure- and Secure, never sent over http")
	}
	if h := strings.ToLower(u.Hostname()); h != domain && !strings.HasSuffix(h, "."+domain) {
		return fmt.Errorf("does not cover the callback host %q of redirect_uri: the callback could not set the cookie", h)
	}
	return nil
}
