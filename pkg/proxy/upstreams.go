package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
)

// Several upstreams: one proxy in front of many apps, each chosen by the
// request's host (and optionally a path), as the rules are matched. A
// request for a host no upstream serves is answered 421 Misdirected
// Request and never forwarded. The host is r.Host: the request line's
// absolute URI when there is one (Go's server puts it there, RFC 9112
// §3.2.2), else the Host header; X-Forwarded-Host never chooses an
// upstream (forward-auth reads it, from the ingress only).

// UpstreamRoute is one upstream of Config.Upstreams.
type UpstreamRoute struct {
	// Match is an http.ServeMux pattern without a method that names a
	// host: "grafana.example.com/" (the whole host), or a path under it,
	// "api.example.com/v2/". Hosts are exact names without a port, in
	// any letter case (host names are case-insensitive: they are
	// compared in lower case); the most specific pattern wins, as with
	// the rules.
	Match string `mapstructure:"match" yaml:"match"`
	// UpstreamConfig is the upstream's URL (required) and transport:
	// timeout, idle connections, TLS. Zero values take the upstream
	// section's.
	UpstreamConfig `mapstructure:",squash" yaml:",inline"`
	// Headers overrides, for this upstream, the identity headers of the
	// headers section. [the headers section's]
	Headers UpstreamHeaders `mapstructure:"headers" yaml:"headers"`
}

// Inherit returns u with the upstream section's settings where u has
// none: the zero timeouts, pool size and protocol, and the TLS files
// when u names none of them. The URL is never inherited.
func (u UpstreamConfig) Inherit(section UpstreamConfig) UpstreamConfig {
	if u.Timeout == 0 {
		u.Timeout = section.Timeout
	}
	if u.MaxIdleConnsPerHost == 0 {
		u.MaxIdleConnsPerHost = section.MaxIdleConnsPerHost
	}
	if u.IdleTimeout == 0 {
		u.IdleTimeout = section.IdleTimeout
	}
	if u.StreamTimeout == 0 {
		u.StreamTimeout = section.StreamTimeout
	}
	if u.Protocol == "" {
		u.Protocol = section.Protocol
	}
	if u.Credential == "" {
		u.Credential = section.Credential
	}
	if u.CAFile == "" && u.ClientCertFile == "" && u.ClientKeyFile == "" {
		u.CAFile, u.ClientCertFile, u.ClientKeyFile = section.CAFile, section.ClientCertFile, section.ClientKeyFile
	}
	return u
}

// UpstreamHeaders overrides HeadersConfig for one upstream: a nil field
// keeps the headers section's setting, "" disables a header.
type UpstreamHeaders struct {
	ForwardToken      *bool   `mapstructure:"forward_token" yaml:"forward_token"`
	User              *string `mapstructure:"user" yaml:"user"`
	PreferredUsername *string `mapstructure:"preferred_username" yaml:"preferred_username"`
	Email             *string `mapstructure:"email" yaml:"email"`
	Roles             *string `mapstructure:"roles" yaml:"roles"`
}

// Inherit returns h with the headers section's setting in every field h
// leaves nil: the identity headers this upstream gets, as check-config
// --effective prints them.
func (h UpstreamHeaders) Inherit(section HeadersConfig) UpstreamHeaders {
	c := h.apply(section)
	return UpstreamHeaders{ForwardToken: &c.ForwardToken, User: &c.User, PreferredUsername: &c.PreferredUsername, Email: &c.Email, Roles: &c.Roles}
}

// apply returns c with h's overrides.
func (h UpstreamHeaders) apply(c HeadersConfig) HeadersConfig {
	if h.ForwardToken != nil {
		c.ForwardToken = *h.ForwardToken
	}
	for _, o := range []struct {
		v   *string
		dst *string
	}{{h.User, &c.User}, {h.PreferredUsername, &c.PreferredUsername}, {h.Email, &c.Email}, {h.Roles, &c.Roles}} {
		if o.v != nil {
			*o.dst = *o.v
		}
	}
	return c
}

// upstream is one compiled UpstreamRoute.
type upstream struct {
	index   int
	match   string
	cfg     UpstreamConfig // defaults applied
	url     *url.URL
	headers *headerRules
	// audience is the aud of the upstream's assertions (credential
	// assertion; see newCredential, called by build).
	audience string
	rp       *httputil.ReverseProxy // built by build
	grpc     *grpcForward           // built by build
	rpCORS   *httputil.ReverseProxy // rp for the routes with a CORS policy; nil without any
	grpcCORS *grpcForward           // grpc for the routes with a CORS policy; nil without any
	p        *Proxy                 // set by build
}

// ServeHTTP marks the upstream's pattern in upstreamSet.mux; it is never
// called.
func (u *upstream) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "misrouted", http.StatusInternalServerError)
}

// rewrite is the upstream's ReverseProxy.Rewrite; its proxy is set by
// bind.
func (u *upstream) rewrite(pr *httputil.ProxyRequest) { u.p.rewrite(pr, u.url, u.headers) }

// upstreamSet chooses the upstream of a request.
type upstreamSet struct {
	all []*upstream
	// byHost holds the upstream of every host named by "host/" alone:
	// one map lookup per request, however many hosts.
	byHost map[string]*upstream
	// pathHosts are the hosts with path patterns, judged by mux.
	pathHosts map[string]bool
	mux       *http.ServeMux
}

// compileUpstreams checks and compiles cfg.Upstreams (nil when there are
// none), defaulting each transport setting to cfg.Upstream's.
func compileUpstreams(cfg Config) (*upstreamSet, error) {
	if len(cfg.Upstreams) == 0 {
		return nil, nil
	}
	var errs []error
	// bad reports a problem of Upstreams[i], which it names first.
	bad := func(i int, format string, args ...any) {
		k := fmt.Sprintf("Upstreams[%d]", i)
		errs = append(errs, fieldErrorf(fields(k), "%s: "+format, append([]any{named(k)}, args...)...))
	}
	if cfg.Upstream.URL != "" {
		errs = append(errs, fieldErrorf(fields("Upstreams", "Upstream.URL"),
			"%s and %s are exclusive: name every app in %[2]s (the %s section then only gives the transport defaults)",
			named("Upstream.URL"), named("Upstreams"), named("Upstream")))
	}
	s := &upstreamSet{byHost: map[string]*upstream{}, pathHosts: map[string]bool{}, mux: http.NewServeMux()}
	seen := map[string]int{}
	identity := []string{cfg.Headers.User, cfg.Headers.PreferredUsername, cfg.Headers.Email, cfg.Headers.Roles}
	for i, rc := range cfg.Upstreams {
		host, path, err := splitUpstreamMatch(rc.Match)
		if err != nil {
			bad(i, "%s %q: %v", leaf("Upstreams[%d].Match", i), rc.Match, err)
			continue
		}
		key := host + path
		if j, ok := seen[key]; ok {
			bad(i, "%s %q: %s has the same pattern", leaf("Upstreams[%d].Match", i), rc.Match, named("Upstreams[%d]", j))
			continue
		}
		seen[key] = i
		uc := rc.UpstreamConfig.Inherit(cfg.Upstream)
		prefix := fmt.Sprintf("Upstreams[%d].", i)
		if uerrs := uc.validate(prefix); len(uerrs) > 0 {
			errs = append(errs, uerrs...)
			continue
		}
		if uc.URL == "" {
			k := fmt.Sprintf("Upstreams[%d]", i)
			errs = append(errs, missingFieldf(fields(k), "%s: %s is required", named(k), leaf(k+".URL")))
			continue
		}
		if err := checkCredential(prefix+"Credential", uc.Credential); err != nil {
			errs = append(errs, err)
			continue
		}
		if terrs := checkTarget(prefix, uc); len(terrs) > 0 {
			errs = append(errs, terrs...)
			continue
		}
		hc := rc.Headers.apply(cfg.Headers)
		if herrs := hc.validate(fmt.Sprintf("Upstreams[%d].Headers", i)); len(herrs) > 0 {
			errs = append(errs, herrs...)
			continue
		}
		u, _ := url.Parse(uc.URL) // validated
		up := &upstream{index: i, match: host + path, cfg: uc, url: u, headers: newHeaderRules(hc), audience: uc.Audience}
		if up.audience == "" && uc.Credential != CredentialExchange {
			up.audience = defaultAudience(host, path)
		}
		identity = append(identity, hc.User, hc.PreferredUsername, hc.Email, hc.Roles)
		if perr := registerUpstream(s.mux, host+path, up); perr != nil {
			bad(i, "match %q: %v", rc.Match, perr)
			continue
		}
		if path == "/" {
			s.byHost[host] = up
		} else {
			s.pathHosts[host] = true
		}
		s.all = append(s.all, up)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// The client's copies of every identity header any upstream (or the
	// headers section) uses are stripped on every upstream: two apps may
	// share a backend, or trust each other's names.
	for _, up := range s.all {
		for _, n := range identity {
			if n != "" {
				up.headers.strip[foldName(n)] = struct{}{}
			}
		}
	}
	return s, nil
}

// registerUpstream registers up's pattern on mux, turning ServeMux's
// panic on a conflict into an error.
func registerUpstream(mux *http.ServeMux, pattern string, up *upstream) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	mux.Handle(pattern, up)
	return nil
}

// splitUpstreamMatch splits an upstream pattern "host/path" into its host
// (a DNS name or address, no port, lower-cased) and its path.
func splitUpstreamMatch(m string) (host, path string, err error) {
	if strings.ContainsAny(m, " \t") {
		return "", "", errors.New("want HOST/[PATH] without a method (the rules judge methods)")
	}
	i := strings.IndexByte(m, '/')
	switch {
	case m == "":
		return "", "", errors.New("required: HOST/ or HOST/PATH")
	case i < 0:
		return "", "", fmt.Errorf("want %s/ (the whole host) or %s/PATH", m, m)
	case i == 0:
		return "", "", errors.New("must name a host: a request for a host no upstream names is refused with 421")
	}
	host, path = m[:i], m[i:]
	switch {
	case strings.ContainsAny(host, ":[]"):
		return "", "", errors.New("the host must not carry a port (requests are matched by host name)")
	case strings.HasSuffix(host, "."):
		return "", "", errors.New("a trailing dot never matches: the proxy drops it from request hosts")
	case strings.ContainsAny(host, "{}*"):
		return "", "", errors.New("hosts are exact names (no wildcards)")
	}
	// Host names are case-insensitive: any spelling, compared in lower
	// case (as the request's host, and allowed_redirect_hosts).
	host = strings.ToLower(host)
	if !strings.Contains(path, "{") {
		if reason := checkPath(path); reason != "" {
			return "", "", fmt.Errorf("path: %s", reason)
		}
	}
	return host, path, nil
}

// pick returns the upstream of r (r.Host canonical: lower case, no
// trailing dot), or nil when none serves it.
func (s *upstreamSet) pick(r *http.Request) *upstream {
	host := r.Host
	if i := strings.LastIndexByte(host, ':'); i >= 0 && i > strings.LastIndexByte(host, ']') {
		host = host[:i]
	}
	if !s.pathHosts[host] {
		return s.byHost[host]
	}
	if h, _ := s.mux.Handler(r); h != nil {
		if up, ok := h.(*upstream); ok {
			return up
		}
	}
	return s.byHost[host]
}
