package authflow

import (
	"net/http"
	"net/url"
	"strings"
)

// Where a sign-in starts. With idp.Config.AllowedRedirectHosts, the apps of one
// sign-in live on several hosts and the callback on one of them (or on a
// central host of its own). A sign-in may start on any of them: at the
// login route of an app's host, through LoginURLFor (a protected page),
// or through forward-auth's sign-in redirect. Wherever it starts, the
// callback must find the login state, and a relative return-to target
// means the host where the sign-in started, never the callback's.

// Site is where the sign-in lives: the callback (RedirectURI), the
// routes' prefix, the hosts it may send browsers back to, and the
// session cookie's domain.
type Site struct {
	RedirectURI  *url.URL
	AuthPrefix   string
	Redirects    *RedirectHosts // nil without idp.Config.AllowedRedirectHosts
	CookieDomain string         // idp.SessionConfig.CookieDomain, when sessions are on
}

// appOrigin returns the origin ("https://a.example.com[:port]") of the
// request host when it is an app host: another host than RedirectURI's,
// named by idp.Config.AllowedRedirectHosts. It is "" on the callback host, on
// a host the allowlist does not name (a proxy that rewrites Host, a test
// server reached by address), and without an allowlist: there a
// relative target stays relative, as on a single-host site. The scheme is
// RedirectURI's (a TLS-terminating ingress in front is the rule).
func (s *Site) appOrigin(r *http.Request) string {
	if s.Redirects == nil || r.Host == "" {
		return ""
	}
	cb := s.RedirectURI
	t, ok := s.Redirects.target(cb.Scheme+"://"+r.Host+"/", cb.Scheme == "https")
	if !ok {
		return ""
	}
	origin := strings.TrimSuffix(t, "/")
	if own, ok := normalOrigin(cb); ok && own == origin {
		return ""
	}
	return origin
}

// normalOrigin is u's origin spelled as RedirectHosts.target spells one:
// lower case, without the scheme's default port.
func normalOrigin(u *url.URL) (string, bool) {
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if u.Scheme == "https" && port == "443" || u.Scheme == "http" && port == "80" {
		port = ""
	}
	if host == "" {
		return "", false
	}
	if port != "" {
		host += ":" + port
	}
	return u.Scheme + "://" + host, true
}

// centralLoginURL is the login route on the callback host, to come back
// to target (an absolute URL judged by RedirectHosts.target).
func (s *Site) centralLoginURL(target string) string {
	cb := s.RedirectURI
	return cb.Scheme + "://" + cb.Host + strings.TrimSuffix(s.AuthPrefix, "/") + "/login?return_to=" + url.QueryEscape(target)
}

// stateDomain is the Domain of the login-state cookie set in answer to r:
// idp.SessionConfig.CookieDomain when r's host is under it, so that the
// callback host (under it as well, New checks) reads a state set on an
// app's host; "" (a host-only cookie) otherwise.
func (s *Site) stateDomain(r *http.Request) string {
	if s.CookieDomain == "" {
		return ""
	}
	if hostUnder(r.Host, s.CookieDomain) {
		return s.CookieDomain
	}
	return ""
}

// hostUnder reports whether the host of a Host value ("a.example.com:8443")
// is domain or one of its subdomains, case-insensitively.
func hostUnder(hostport, domain string) bool {
	h := hostport
	if i := strings.LastIndexByte(h, ':'); i >= 0 && i > strings.LastIndexByte(h, ']') {
		h = h[:i]
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	return h == domain || strings.HasSuffix(h, "."+domain)
}

// LoginURLFor returns the URL of the login route that brings the browser
// back to the page r asked for. It is LoginURL(r.URL.RequestURI()), a
// site-relative URL, unless r is for another host than RedirectURI's (the
// central callback host) that idp.Config.AllowedRedirectHosts allows: then it
// is the absolute URL of the login route on the callback host, with r's
// absolute URL (RedirectURI's scheme, r.Host) as return_to, so that one
// callback serves every app of the sign-in.
func (s *Site) LoginURLFor(r *http.Request) string {
	uri := r.URL.RequestURI()
	origin := s.appOrigin(r)
	if origin == "" {
		return s.LoginURL(uri)
	}
	target, ok := s.Redirects.target(origin+uri, strings.HasPrefix(origin, "https:"))
	if !ok {
		target = origin + "/" // the page is no safe target: the host's root, never the callback host's
	}
	return s.centralLoginURL(target)
}

// LoginURL returns the site-relative URL of the login route that brings
// the browser back to returnTo (a path with an optional query; "/" when
// it is not a safe return-to target): "/auth/login?return_to=%2Fpage".
func (s *Site) LoginURL(returnTo string) string {
	if _, ok := safeReturnTo(returnTo); !ok {
		returnTo = "/"
	}
	return strings.TrimSuffix(s.AuthPrefix, "/") + "/login?return_to=" + url.QueryEscape(returnTo)
}
