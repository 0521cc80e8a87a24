package idp

import (
	"net/http"
	"net/url"
	"strings"
)

// Where a sign-in starts. With Config.AllowedRedirectHosts, the apps of one
// sign-in live on several hosts and the callback on one of them (or on a
// central host of its own). A sign-in may start on any of them: at the
// login route of an app's host, through LoginURLFor (a protected page),
// or through forward-auth's sign-in redirect. Wherever it starts, the
// callback must find the login state, and a relative return-to target
// means the host where the sign-in started, never the callback's.

// appOrigin returns the origin ("https://a.example.com[:port]") of the
// request host when it is an app host: another host than RedirectURI's,
// named by Config.AllowedRedirectHosts. It is "" on the callback host, on
// a host the allowlist does not name (a proxy that rewrites Host, a test
// server reached by address), and without an allowlist: there a
// relative target stays relative, as on a single-host site. The scheme is
// RedirectURI's (a TLS-terminating ingress in front is the rule).
func (p *Plugin) appOrigin(r *http.Request) string {
	if p.redirects == nil || r.Host == "" {
		return ""
	}
	cb, err := url.Parse(p.cfg.RedirectURI)
	if err != nil {
		return ""
	}
	t, ok := p.redirects.target(cb.Scheme+"://"+r.Host+"/", cb.Scheme == "https")
	if !ok {
		return ""
	}
	origin := strings.TrimSuffix(t, "/")
	if own, ok := normalOrigin(cb); ok && own == origin {
		return ""
	}
	return origin
}

// normalOrigin is u's origin spelled as redirectHosts.target spells one:
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
// to target (an absolute URL judged by redirectHosts.target).
func (p *Plugin) centralLoginURL(target string) string {
	cb, _ := url.Parse(p.cfg.RedirectURI) // validated by New
	return cb.Scheme + "://" + cb.Host + strings.TrimSuffix(p.cfg.AuthPrefix, "/") + "/login?return_to=" + url.QueryEscape(target)
}

// stateDomain is the Domain of the login-state cookie set in answer to r:
// SessionConfig.CookieDomain when r's host is under it, so that the
// callback host (under it as well, New checks) reads a state set on an
// app's host; "" (a host-only cookie) otherwise.
func (p *Plugin) stateDomain(r *http.Request) string {
	if p.sessions == nil || p.sessions.domain == "" {
		return ""
	}
	if hostUnder(r.Host, p.sessions.domain) {
		return p.sessions.domain
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
