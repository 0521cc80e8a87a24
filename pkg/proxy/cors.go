package proxy

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/fielderr"

	"github.com/idp-proxy/idp-proxy/internal/problem"
)

// CORSConfig is the cross-origin policy of a route (routes[].cors): the
// proxy answers the route's preflights itself, without a token, and adds
// the CORS response headers to every answer of the route, the upstream's
// (whose own Access-Control-* headers are replaced) and the proxy's
// refusals alike. A route without AllowedOrigins has no policy of its own
// (see Config.SkipAuthPreflight).
type CORSConfig struct {
	// AllowedOrigins are the origins whose scripts may read the route's
	// answers: exact origins ("https://app.example.com",
	// "http://127.0.0.1:5173"), patterns whose leftmost label is "*"
	// ("https://*.example.com": any subdomain, at any depth, of
	// example.com over https on the default port, never example.com
	// itself), or "*" alone (any origin, only without AllowCredentials).
	// "null" is refused: any page can send it (sandboxed frames, file:).
	// Required for a policy. [none]
	AllowedOrigins []string `mapstructure:"allowed_origins" yaml:"allowed_origins"`
	// AllowedMethods are the methods a preflight may ask for, upper case.
	// [the method of the route's pattern (GET adds HEAD), or GET, HEAD,
	// POST for a pattern without one]
	AllowedMethods []string `mapstructure:"allowed_methods" yaml:"allowed_methods"`
	// AllowedHeaders are the request headers a preflight may ask for,
	// case-insensitive ("Authorization", "Content-Type"); "*" allows any
	// header but Authorization, which is always named. [none beyond the
	// CORS-safelisted ones]
	AllowedHeaders []string `mapstructure:"allowed_headers" yaml:"allowed_headers"`
	// ExposedHeaders are the response headers scripts may read beyond
	// the CORS-safelisted ones; "*" (all) only without AllowCredentials.
	// The proxy's own 401 and 403 also expose WWW-Authenticate. [none]
	ExposedHeaders []string `mapstructure:"exposed_headers" yaml:"exposed_headers"`
	// AllowCredentials lets scripts send cookies (fetch's credentials:
	// "include") and read the answers: the allowed origin is then named,
	// never "*". [false]
	AllowCredentials bool `mapstructure:"allow_credentials" yaml:"allow_credentials"`
	// MaxAge is how long a browser may cache a preflight's answer
	// (Access-Control-Max-Age, whole seconds; Chromium caps it at 2h).
	// [0: not sent, the browser's default of 5s]
	MaxAge time.Duration `mapstructure:"max_age" yaml:"max_age"`
}

// set reports whether any field of c is set.
func (c CORSConfig) set() bool {
	return len(c.AllowedOrigins) > 0 || len(c.AllowedMethods) > 0 || len(c.AllowedHeaders) > 0 ||
		len(c.ExposedHeaders) > 0 || c.AllowCredentials || c.MaxAge != 0
}

// corsPolicy is a compiled CORSConfig. Its header values are joined once,
// so that a request costs a map lookup and a few header writes.
type corsPolicy struct {
	anyOrigin   bool                // "*"
	exact       map[string]struct{} // serialized origins, as browsers send them
	wildcards   []originPattern
	credentials bool
	methods     string // Access-Control-Allow-Methods
	headers     string // Access-Control-Allow-Headers ("" with anyHeader)
	allowed     []string
	anyHeader   bool     // "*": echo the requested headers but Authorization unless named
	exposed     []string // Access-Control-Expose-Headers of forwarded answers (nil: none)
	refusal     []string // that of the proxy's refusals (adds WWW-Authenticate)
	maxAge      []string // nil: not sent
	desc        string   // for the rule table
}

// originPattern is "scheme://*.suffix[:port]".
type originPattern struct {
	prefix string // "https://"
	suffix string // ".example.com"
	port   string // ":8443", or ""
}

// CORS header names, canonical, for direct map writes.
const (
	hdrOrigin = "Origin"
	hdrVary   = "Vary"
	hdrACAO   = "Access-Control-Allow-Origin"
	hdrACAC   = "Access-Control-Allow-Credentials"
	hdrACAM   = "Access-Control-Allow-Methods"
	hdrACAH   = "Access-Control-Allow-Headers"
	hdrACEH   = "Access-Control-Expose-Headers"
	hdrACMA   = "Access-Control-Max-Age"
	hdrACRM   = "Access-Control-Request-Method"
	hdrACRH   = "Access-Control-Request-Headers"

	accessControlPfx = "Access-Control-" // of every CORS response header
)

var (
	varyOrigin    = []string{hdrOrigin}
	varyPreflight = []string{"Origin, Access-Control-Request-Method, Access-Control-Request-Headers"}
	trueValue     = []string{"true"}
	anyOriginVal  = []string{"*"}
)

// compileCORS checks and compiles the policy of routes[i] (pattern
// already compiled); nil when the route has none.
func compileCORS(i int, pattern string, c CORSConfig) (*corsPolicy, error) {
	if !c.set() {
		return nil, nil
	}
	field := func(k string) string { return fmt.Sprintf("Routes[%d].CORS.%s", i, k) }
	ref := func(k string) fielderr.Ref { return leaf("%s", field(k)) }
	// bad names the route and its policy before the problem:
	// Routes[0] "/api/": CORS: ...
	bad := func(f, format string, args ...any) error {
		return fieldErrorf(fields(f), "%s %q: %s: "+format, append([]any{named("Routes[%d]", i), pattern, leaf("Routes[%d].CORS", i)}, args...)...)
	}
	origins := ref("AllowedOrigins")
	if len(c.AllowedOrigins) == 0 {
		return nil, bad(fmt.Sprintf("Routes[%d].CORS", i), "%s is required (the origins whose scripts may call the route)", origins)
	}
	p := &corsPolicy{credentials: c.AllowCredentials, exact: map[string]struct{}{},
		desc: "CORS from " + strings.Join(c.AllowedOrigins, ", ")}
	if c.AllowCredentials {
		p.desc += " with credentials"
	}
	for j, o := range c.AllowedOrigins {
		k := field(fmt.Sprintf("AllowedOrigins[%d]", j))
		switch {
		case o == "*":
			if c.AllowCredentials {
				return nil, bad(k, "%s \"*\" with %s: any site could read its visitors' answers; list the origins", origins, ref("AllowCredentials"))
			}
			if len(c.AllowedOrigins) > 1 {
				return nil, bad(k, "%s \"*\" allows every origin: list no others", origins)
			}
			p.anyOrigin = true
			continue
		case strings.EqualFold(o, "null"):
			return nil, bad(k, "%s %q: any page can send the null origin (sandboxed frames, file: and data: documents): name real origins", origins, o)
		}
		exact, pat, err := parseOrigin(o)
		if err != nil {
			return nil, bad(k, "%s %q: %v", origins, o, err)
		}
		if pat != nil {
			if slices.Contains(p.wildcards, *pat) {
				return nil, bad(k, "%s %q is listed twice", origins, o)
			}
			p.wildcards = append(p.wildcards, *pat)
			continue
		}
		if _, dup := p.exact[exact]; dup {
			return nil, bad(k, "%s %q is listed twice", origins, o)
		}
		p.exact[exact] = struct{}{}
	}
	methods, err := corsMethods(pattern, c.AllowedMethods)
	if err != nil {
		return nil, bad(field("AllowedMethods"), "%s: %v", ref("AllowedMethods"), err)
	}
	p.methods = strings.Join(methods, ", ")
	for _, h := range c.AllowedHeaders {
		switch {
		case h == "*":
			p.anyHeader = true
		case !isToken(h):
			return nil, bad(field("AllowedHeaders"), "%s: %q is not a header name", ref("AllowedHeaders"), h)
		default:
			p.allowed = append(p.allowed, strings.ToLower(h))
		}
	}
	p.headers = strings.Join(c.AllowedHeaders, ", ")
	var exposed []string
	for _, h := range c.ExposedHeaders {
		switch {
		case h == "*" && c.AllowCredentials:
			return nil, bad(field("ExposedHeaders"), "%s \"*\" means every header only without %s (with it, a header named \"*\"): list the headers", ref("ExposedHeaders"), ref("AllowCredentials"))
		case h != "*" && !isToken(h):
			return nil, bad(field("ExposedHeaders"), "%s: %q is not a header name", ref("ExposedHeaders"), h)
		}
		exposed = append(exposed, h)
	}
	if len(exposed) > 0 {
		p.exposed = []string{strings.Join(exposed, ", ")}
	}
	if !slices.ContainsFunc(exposed, func(h string) bool { return h == "*" || strings.EqualFold(h, "WWW-Authenticate") }) {
		exposed = append(exposed, "WWW-Authenticate")
	}
	p.refusal = []string{strings.Join(exposed, ", ")}
	switch {
	case c.MaxAge < 0:
		return nil, bad(field("MaxAge"), "%s must not be negative, got %s", ref("MaxAge"), c.MaxAge)
	case c.MaxAge%time.Second != 0:
		return nil, bad(field("MaxAge"), "%s %s: Access-Control-Max-Age counts whole seconds", ref("MaxAge"), c.MaxAge)
	case c.MaxAge > 0:
		p.maxAge = []string{strconv.FormatInt(int64(c.MaxAge/time.Second), 10)}
	}
	return p, nil
}

// parseOrigin checks an allowed origin: an exact one is returned
// serialized as browsers send it (lower case, no default port); a
// pattern "scheme://*.suffix[:port]" as an originPattern.
func parseOrigin(o string) (string, *originPattern, error) {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "", nil, fmt.Errorf("want scheme://host[:port] (http or https), or a pattern such as https://*.example.com")
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.HasSuffix(o, "#") {
		return "", nil, fmt.Errorf("an origin is scheme://host[:port], without user info, path, query or fragment: write %q", u.Scheme+"://"+u.Host)
	}
	if u.Path == "/" {
		return "", nil, fmt.Errorf("an origin has no path, not even \"/\": write %q", u.Scheme+"://"+u.Host)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port != "" || strings.HasSuffix(u.Host, ":") {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return "", nil, fmt.Errorf("port %q is not a TCP port (1-65535)", port)
		}
		if (u.Scheme == "http" && n == 80) || (u.Scheme == "https" && n == 443) {
			port = "" // browsers leave the default port out of Origin
		} else {
			port = strconv.Itoa(n)
		}
	}
	withPort := func(h string) string {
		if port != "" {
			return net.JoinHostPort(h, port)
		}
		if strings.Contains(h, ":") {
			return "[" + h + "]"
		}
		return h
	}
	if suffix, ok := strings.CutPrefix(host, "*."); ok {
		if !validHostName(suffix) || !strings.Contains(suffix, ".") && suffix != "localhost" {
			return "", nil, fmt.Errorf("a pattern is scheme://*.domain with a domain of two labels or more (*.example.com)")
		}
		pat := &originPattern{prefix: u.Scheme + "://", suffix: "." + suffix}
		if port != "" {
			pat.port = ":" + port
		}
		return "", pat, nil
	}
	if strings.Contains(host, "*") {
		return "", nil, fmt.Errorf("\"*\" may only stand for the leftmost labels of the host (https://*.example.com)")
	}
	if !strings.Contains(host, ":") && !validHostName(host) {
		return "", nil, fmt.Errorf("host %q is not a host name (IDNs are written in punycode, as browsers send them)", host)
	}
	return u.Scheme + "://" + withPort(host), nil, nil
}

// validHostName reports whether h is dot-separated labels of lower-case
// letters, digits and hyphens (an IPv4 address is one).
func validHostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, l := range strings.Split(h, ".") {
		if !validLabel(l) {
			return false
		}
	}
	return true
}

func validLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		if c := l[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// corsMethods returns the allowed methods of a route: those configured,
// each one a method the route's pattern matches, or the default.
func corsMethods(pattern string, configured []string) ([]string, error) {
	pm := ""
	if m, _, ok := strings.Cut(strings.TrimSpace(pattern), " "); ok && !strings.Contains(m, "/") {
		pm = m
	}
	if len(configured) == 0 {
		switch pm {
		case "":
			return []string{http.MethodGet, http.MethodHead, http.MethodPost}, nil
		case http.MethodGet:
			return []string{http.MethodGet, http.MethodHead}, nil
		}
		return []string{pm}, nil
	}
	for j, m := range configured {
		switch {
		case m == "*":
			return nil, fmt.Errorf("list the methods (\"*\" means every method only without credentials)")
		case !isToken(m) || !upperCase(m):
			return nil, fmt.Errorf("%q: methods are case-sensitive upper-case tokens", m)
		case m == http.MethodConnect || m == http.MethodTrace:
			return nil, fmt.Errorf("%s is always refused by the proxy", m)
		case pm != "" && m != pm && !(pm == http.MethodGet && m == http.MethodHead):
			return nil, fmt.Errorf("%s is never judged by this route, whose pattern matches %s only (a preflight is judged by the rule of the method it asks for)", m, pm)
		case slices.Contains(configured[:j], m):
			return nil, fmt.Errorf("%s is listed twice", m)
		}
	}
	return configured, nil
}

// allows reports whether origin (an Origin header's value) may read the
// route's answers.
func (p *corsPolicy) allows(origin string) bool {
	if p.anyOrigin {
		return true
	}
	if _, ok := p.exact[origin]; ok {
		return true
	}
	for _, w := range p.wildcards {
		if w.matches(origin) {
			return true
		}
	}
	return false
}

// matches reports whether origin is "prefix labels suffix port", labels
// being one or more host-name labels.
func (w originPattern) matches(origin string) bool {
	rest, ok := strings.CutPrefix(origin, w.prefix)
	if !ok {
		return false
	}
	if w.port != "" {
		if rest, ok = strings.CutSuffix(rest, w.port); !ok {
			return false
		}
	}
	sub, ok := strings.CutSuffix(rest, w.suffix)
	return ok && validHostName(sub)
}

// allowOrigin sets Access-Control-Allow-Origin (and -Credentials) for an
// allowed origin.
func (p *corsPolicy) allowOrigin(h http.Header, origin []string) {
	if p.anyOrigin && !p.credentials {
		h[hdrACAO] = anyOriginVal
		return
	}
	h[hdrACAO] = origin[:1:1] // the request's; appending must not write into its backing array
	if p.credentials {
		h[hdrACAC] = trueValue
	}
}

// actual sets the CORS headers of a route's answer to a request that is
// no preflight: forwarded (the upstream's own are removed by
// modifyResponse) or refused by the proxy.
func (p *corsPolicy) actual(h http.Header, r *http.Request, refused bool) {
	if v := h[hdrVary]; v != nil {
		h[hdrVary] = append(v, hdrOrigin)
	} else {
		h[hdrVary] = varyOrigin // len == cap: an append copies it
	}
	origin := r.Header[hdrOrigin]
	if len(origin) != 1 || !p.allows(origin[0]) {
		return
	}
	p.allowOrigin(h, origin)
	switch {
	case refused:
		h[hdrACEH] = p.refusal
	case p.exposed != nil:
		h[hdrACEH] = p.exposed
	}
}

// preflight answers a CORS preflight of the route: 204 with the policy to
// an allowed origin (the browser checks its method and headers against
// it), 403 without CORS headers to any other. It reports whether the
// origin was allowed.
func (p *corsPolicy) preflight(w http.ResponseWriter, r *http.Request) bool {
	h := w.Header()
	h[hdrVary] = varyPreflight
	origin := r.Header[hdrOrigin]
	if len(origin) != 1 || !p.allows(origin[0]) {
		problem.Write(w, http.StatusForbidden, "this origin may not call this route (CORS)")
		return false
	}
	p.allowOrigin(h, origin)
	h.Set(hdrACAM, p.methods)
	if hs := p.allowHeaders(r.Header.Values(hdrACRH)); hs != "" {
		h.Set(hdrACAH, hs)
	}
	if p.maxAge != nil {
		h[hdrACMA] = p.maxAge
	}
	w.WriteHeader(http.StatusNoContent)
	return true
}

// allowHeaders is the Access-Control-Allow-Headers of a preflight asking
// for requested: the configured list, or with "*" the requested headers
// (Authorization only when named).
func (p *corsPolicy) allowHeaders(requested []string) string {
	if !p.anyHeader {
		return p.headers
	}
	var out []string
	for _, v := range requested {
		for _, name := range strings.Split(v, ",") {
			name = strings.ToLower(strings.TrimSpace(name))
			if !isToken(name) || (name == "authorization" && !slices.Contains(p.allowed, name)) {
				continue
			}
			out = append(out, name)
		}
	}
	for _, a := range p.allowed {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return strings.Join(out, ", ")
}

// stripCORS removes the upstream's Access-Control-* headers from the
// answer of a route with a policy: the proxy's are the route's. Go's
// transport gives every received header name its canonical form, so a
// case-sensitive prefix suffices; a pass over an answer's few headers costs
// less than looking each CORS header up.
func stripCORS(h http.Header) {
	for k := range h {
		if strings.HasPrefix(k, accessControlPfx) {
			delete(h, k)
		}
	}
}

// corsForwarder returns rp for the routes with a CORS policy, whose
// answers lose the upstream's Access-Control-* headers: the proxy sets the
// route's (nil when no route has a policy). A second ReverseProxy rather
// than a mark in the request's context costs a request nothing.
func (p *Proxy) corsForwarder(rp *httputil.ReverseProxy) *httputil.ReverseProxy {
	if !p.rules.cors {
		return nil
	}
	c := *rp
	modify := rp.ModifyResponse // the gRPC forwarder's has more to do
	c.ModifyResponse = func(resp *http.Response) error {
		stripCORS(resp.Header)
		return modify(resp)
	}
	return &c
}

// corsGRPC returns g for the routes with a CORS policy (gRPC-web calls
// from browsers), whose answers lose the upstream's Access-Control-*
// headers as corsForwarder's do (nil when no route has a policy).
func (p *Proxy) corsGRPC(g *grpcForward) *grpcForward {
	if g == nil || !p.rules.cors {
		return nil
	}
	c := *g
	c.rp = p.corsForwarder(g.rp)
	return &c
}
