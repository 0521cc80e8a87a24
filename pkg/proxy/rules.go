package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/idp-proxy/idp-proxy/internal/fielderr"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// policy is what a rule requires.
type policy uint8

const (
	policyAuthenticated policy = iota // any valid token, then the guards
	policyPublic                      // no token needed; a valid one is forwarded
	policyDeny                        // always 403 (default_policy: deny)
)

// rule is a compiled route rule. It is the http.Handler registered in the
// ServeMux under its pattern, so that mux.Handler(r) finds it; it is never
// served.
type rule struct {
	index   int    // position in Config.Routes, -1 for built-in rules
	pattern string // ServeMux pattern, or a name such as "(default)"
	policy  policy
	guards  []idp.Guard
	desc    string // human description of the requirement
	label   string // metrics label: the pattern, or a name in parentheses
	metrics *ruleMetrics
	cors    *corsPolicy // routes[].cors; nil: none
	cert    *certRule   // routes[].client_cert; nil: none
	dpop    ruleDPoP    // routes[].dpop (dpop.go)
}

func (*rule) ServeHTTP(http.ResponseWriter, *http.Request) {
	panic("proxy: a rule is not a handler")
}

// ruleSet is the compiled table.
type ruleSet struct {
	mux     *http.ServeMux
	rules   []*rule
	def     *rule            // unmatched requests
	exclude map[string]*rule // idp.excluded_paths, exact path

	// folded holds the same rules under lower-cased patterns (and
	// excluded paths), to find requests whose path is judged by another
	// rule once letter case is ignored, as Express, ASP.NET Core and
	// case-insensitive file systems ignore it.
	folded        *http.ServeMux
	foldedExclude map[string]*rule
	upperPatterns bool // a pattern or excluded path is not its own foldCase
	cors          bool // a rule has a CORS policy

	memo *ruleMemo // match's answers
}

// compileRules compiles routes into a ServeMux, once. Conflicting or
// invalid patterns are errors naming the rules involved. excluded are
// idp.excluded_paths: exact paths served as public.
//
// issuers are the names of the trusted issuers (idp.Config.IssuerName and
// the names of idp.Config.Issuers) that rules may name.
func compileRules(routes []RouteConfig, defaultPolicy string, excluded []string, issuers ...string) (*ruleSet, error) {
	rs := &ruleSet{mux: http.NewServeMux(), folded: http.NewServeMux(), memo: newRuleMemo()}
	if len(excluded) > 0 {
		rs.exclude = make(map[string]*rule, len(excluded))
		rs.foldedExclude = make(map[string]*rule, len(excluded))
		for _, p := range excluded {
			r := &rule{index: -1, pattern: p, policy: policyPublic,
				desc: "public (idp.excluded_paths, exact path)", label: "(excluded) " + p}
			rs.exclude[p] = r
			rs.foldedExclude[foldCase(p)] = r
			rs.upperPatterns = rs.upperPatterns || !caseFolded(p)
		}
	}
	var errs []error
	for i, rc := range routes {
		r, err := compileRule(i, rc, issuers)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if r.cors, err = compileCORS(i, r.pattern, rc.CORS); err != nil {
			errs = append(errs, err)
			continue
		}
		if r.cors != nil {
			rs.cors = true
			r.desc += " + " + r.cors.desc
		}
		var certDesc string
		if r.cert, certDesc, err = compileCertRule(i, rc); err != nil {
			errs = append(errs, err)
			continue
		}
		if r.cert != nil {
			r.desc = certDesc + " + " + r.desc
			if r.cert.tokenOptional {
				r.desc = certDesc
			}
		}
		if r.dpop.set {
			r.desc += " + dpop " + r.dpop.mode.String()
		}
		if p := patternPath(r.pattern); rs.exclude[p] != nil && !strings.Contains(p, "{") {
			// The excluded path is public before any rule is looked at.
			errs = append(errs, fieldErrorf(fields("IDP.ExcludedPaths"), "%s %q: its path %q is in %s, which serves it without a token before any rule: remove one of the two", named("Routes[%d]", i), rc.Match, p, named("IDP.ExcludedPaths")))
			continue
		}
		if err := register(rs.mux, r.pattern, r); err != nil {
			errs = append(errs, explainConflict(rs.rules, i, rc.Match, err))
			continue
		}
		if err := register(rs.folded, foldPattern(r.pattern), r); err != nil {
			errs = append(errs, fmt.Errorf("proxy: routes[%d] %q differs only in letter case from an earlier rule: upstreams that ignore case would serve both alike", i, rc.Match))
			continue
		}
		rs.upperPatterns = rs.upperPatterns || !caseFolded(patternPath(r.pattern))
		rs.rules = append(rs.rules, r)
	}
	switch defaultPolicy {
	case PolicyDeny:
		rs.def = &rule{index: -1, pattern: "(unmatched)", policy: policyDeny, desc: "deny (default_policy)", label: "(default)"}
	default:
		rs.def = &rule{index: -1, pattern: "(unmatched)", policy: policyAuthenticated, desc: "authenticated (default_policy)", label: "(default)"}
	}
	// A catch-all "/" (less specific than any other pattern, so it never
	// changes which rule wins) makes a miss as cheap as a hit: without it
	// ServeMux works out the allowed methods for a 405 on every miss.
	// Rules that already cover "/" keep it.
	_ = register(rs.mux, "/", rs.def)
	_ = register(rs.folded, "/", rs.def)
	return rs, errors.Join(errs...)
}

// patternHost returns the host of a ServeMux pattern "[METHOD ][HOST]/PATH".
func patternHost(pattern string) string {
	j := strings.IndexByte(pattern, '/')
	if j < 0 {
		return "" // not a pattern: ServeMux says why
	}
	h := strings.TrimLeft(pattern[:j], " \t")
	if i := strings.IndexAny(h, " \t"); i >= 0 {
		h = strings.TrimLeft(h[i:], " \t")
	}
	return h
}

// foldPattern case-folds the host and path of a ServeMux pattern,
// keeping its method.
func foldPattern(pattern string) string {
	if i, j := strings.IndexAny(pattern, " \t"), strings.IndexByte(pattern, '/'); i >= 0 && i < j {
		return pattern[:i] + foldCase(pattern[i:])
	}
	return foldCase(pattern)
}

// foldCase maps s to one spelling for every case-insensitive comparison
// an upstream may make: lower case, after upper case so that letters
// whose upper case is ASCII ("ı" and "ſ", which .NET's OrdinalIgnoreCase
// and Java's equalsIgnoreCase take for "I" and "S") fold with it.
func foldCase(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return strings.ToLower(strings.ToUpper(s))
		}
	}
	return strings.ToLower(s)
}

// caseFolded reports cheaply whether foldCase(s) == s may be assumed:
// s has neither an upper-case ASCII letter nor a byte outside ASCII.
func caseFolded(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' || c >= 0x80 {
			return false
		}
	}
	return true
}

func compileRule(i int, rc RouteConfig, issuers []string) (*rule, error) {
	route := fmt.Sprintf("Routes[%d]", i)
	// bad reports a problem of the rule's field (a Go path under
	// Routes[i]), naming the rule first: Routes[0] "GET /x": ...
	bad := func(field, format string, args ...any) error {
		return fieldErrorf(fields(route+field), "%s %q: "+format, append([]any{named("%s", route), rc.Match}, args...)...)
	}
	// its names a field of the rule by its last element.
	its := func(field string) fielderr.Ref { return leaf("%s", route+field) }
	if strings.TrimSpace(rc.Match) == "" {
		return nil, missingFieldf(fields(route+".Match"), "%s: %s is required", named("%s", route), its(".Match"))
	}
	strategy, err := idp.ParseMatchStrategy(rc.Strategy)
	if err != nil {
		return nil, bad(".Strategy", "%w", err)
	}
	// Host names are case-insensitive: one spelling, lower case, as
	// requests are judged (canonicalHost) and as upstreams are chosen.
	match := lowerPatternHost(rc.Match)
	if h := patternHost(match); h != canonicalHost(h) {
		// A trailing dot: dropped from request hosts, it never matches.
		return nil, bad(".Match", "write the host %q as %q", h, canonicalHost(h))
	}
	if err := neverMatches(match); err != nil {
		return nil, bad(".Match", "%w", err)
	}
	r := &rule{index: i, pattern: match, label: match}
	if r.dpop, err = compileRuleDPoP(rc.DPoP); err != nil {
		return nil, bad(".DPoP", "%s %q: want off, allowed or required", its(".DPoP"), rc.DPoP)
	}
	hasReq := len(rc.Roles) > 0 || len(rc.ClientRoles) > 0 || len(rc.Scopes) > 0 || len(rc.Groups) > 0 ||
		len(rc.Claims) > 0 || len(rc.EmailDomains) > 0
	if rc.Public {
		if hasReq {
			return nil, bad(".Public", "%s excludes %s, %s, %s, %s, %s and %s", its(".Public"),
				its(".Roles"), its(".ClientRoles"), its(".Scopes"), its(".Groups"), its(".Claims"), its(".EmailDomains"))
		}
		if len(rc.Issuers) > 0 {
			return nil, bad(".Issuers", "%s excludes %s: a public route takes requests without a token", its(".Public"), its(".Issuers"))
		}
		if rc.Strategy != "" {
			return nil, bad(".Strategy", "%s makes no sense on a public rule", its(".Strategy"))
		}
		r.policy = policyPublic
		r.desc = "public"
		return r, nil
	}
	if !hasReq && rc.Strategy != "" {
		return nil, bad(".Strategy", "%s without %s, %s, %s, %s or %s", its(".Strategy"),
			its(".Roles"), its(".ClientRoles"), its(".Scopes"), its(".Groups"), its(".Claims"))
	}
	if err := checkItems(rc.Roles); err != nil {
		return nil, bad(".Roles", "%s: %w", its(".Roles"), err)
	}
	if err := checkItems(rc.Scopes); err != nil {
		return nil, bad(".Scopes", "%s: %w", its(".Scopes"), err)
	}
	if err := checkItems(rc.Groups); err != nil {
		return nil, bad(".Groups", "%s: %w", its(".Groups"), err)
	}
	var descs []string
	if len(rc.Issuers) > 0 {
		if err := checkIssuerNames(i, rc.Match, rc.Issuers, issuers); err != nil {
			return nil, err
		}
		g := idp.RequireIssuers(rc.Issuers...)
		r.guards = append(r.guards, g)
		descs = append(descs, describe(g))
	}
	if len(rc.Roles) > 0 {
		g := idp.RequireRoles(strategy, rc.Roles...)
		r.guards = append(r.guards, g)
		descs = append(descs, describe(g))
	}
	clients := make([]string, 0, len(rc.ClientRoles))
	for c := range rc.ClientRoles {
		clients = append(clients, c)
	}
	sort.Strings(clients)
	for _, c := range clients {
		if c == "" {
			return nil, bad(".ClientRoles", "%s: empty client ID", its(".ClientRoles"))
		}
		if len(rc.ClientRoles[c]) == 0 {
			return nil, bad(".ClientRoles["+c+"]", "%s[%s]: no roles", its(".ClientRoles"), c)
		}
		if err := checkItems(rc.ClientRoles[c]); err != nil {
			return nil, bad(".ClientRoles["+c+"]", "%s[%s]: %w", its(".ClientRoles"), c, err)
		}
		g := idp.RequireClientRoles(c, strategy, rc.ClientRoles[c]...)
		r.guards = append(r.guards, g)
		descs = append(descs, describe(g))
	}
	if len(rc.Scopes) > 0 {
		g := idp.RequireScopes(strategy, rc.Scopes...)
		r.guards = append(r.guards, g)
		descs = append(descs, describe(g))
	}
	if len(rc.Groups) > 0 {
		g := idp.RequireGroups(strategy, rc.Groups...)
		r.guards = append(r.guards, g)
		descs = append(descs, describe(g))
	}
	if len(rc.Claims) > 0 {
		g, err := claimsGuard(strategy, rc.Claims)
		if err != nil {
			return nil, bad(".Claims", "%s: %w", its(".Claims"), err)
		}
		r.guards = append(r.guards, g)
		descs = append(descs, describe(g))
	}
	if len(rc.EmailDomains) > 0 {
		g, err := idp.NewEmailDomainsGuard(rc.EmailDomains...)
		if err != nil {
			return nil, bad(".EmailDomains", "%s: %w", its(".EmailDomains"), err)
		}
		r.guards = append(r.guards, g)
		descs = append(descs, describe(g))
	}
	if len(descs) == 0 {
		r.desc = "authenticated"
	} else {
		r.desc = "authenticated + " + strings.Join(descs, " + ")
	}
	return r, nil
}

// claimsGuard compiles a rule's claims, in the order of their paths.
func claimsGuard(s idp.MatchStrategy, claims map[string][]any) (idp.Guard, error) {
	paths := make([]string, 0, len(claims))
	for p := range claims {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	rules := make([]idp.ClaimRule, len(paths))
	for i, p := range paths {
		rules[i] = idp.ClaimRule{Path: p, Values: claims[p]}
	}
	g, err := idp.NewClaimsGuard(s, rules...)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(strings.TrimPrefix(err.Error(), "idp: "), "claims: "))
	}
	return g, nil
}

// neverMatches explains why a rule's pattern can never match a request
// the proxy judges (nil when it can): such a rule would silently leave
// its requests to the default policy.
func neverMatches(pattern string) error {
	if method, _, ok := strings.Cut(strings.TrimSpace(pattern), " "); ok && !strings.Contains(method, "/") {
		switch {
		case !upperCase(method) || !isToken(method):
			return fmt.Errorf("method %q: methods are case-sensitive upper-case tokens (the proxy answers %q with 405): write %q",
				method, method, strings.ToUpper(method))
		case method == http.MethodConnect || method == http.MethodTrace:
			return fmt.Errorf("method %s is always refused by the proxy (405)", method)
		}
	}
	if h := patternHost(pattern); strings.LastIndexByte(h, ':') > strings.LastIndexByte(h, ']') {
		return fmt.Errorf("host %q has a port: rules match the host name only (ServeMux ignores the request's port): write %q",
			h, h[:strings.LastIndexByte(h, ':')])
	}
	path := patternPath(pattern)
	if path == "" {
		return nil // ServeMux reports it
	}
	// Literal segments only: a wildcard matches whatever the request has.
	segs := strings.Split(path, "/")
	for i, seg := range segs {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			segs[i] = "x"
		}
	}
	if reason := checkPath(strings.Join(segs, "/")); reason != "" {
		return fmt.Errorf("path %q: requests with such a path are refused before any rule (%s)", path, reason)
	}
	return nil
}

func checkItems(items []string) error {
	for _, it := range items {
		if strings.TrimSpace(it) == "" {
			return errors.New("empty name")
		}
	}
	return nil
}

func describe(g idp.Guard) string {
	if s, ok := g.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", g)
}

// register adds h to mux under pattern, turning ServeMux's panic on an
// invalid or conflicting pattern into an error.
func register(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%v", v)
		}
	}()
	mux.Handle(pattern, h)
	return nil
}

// explainConflict names the earlier rule that pattern conflicts with, by
// trying the two patterns alone in a fresh ServeMux.
func explainConflict(earlier []*rule, i int, pattern string, cause error) error {
	if err := register(http.NewServeMux(), pattern, http.NotFoundHandler()); err != nil {
		cause = err
		earlier = nil
	}
	for _, e := range earlier {
		m := http.NewServeMux()
		if register(m, e.pattern, e) != nil {
			continue
		}
		if register(m, pattern, e) != nil {
			return fmt.Errorf("proxy: routes[%d] %q conflicts with routes[%d] %q: neither is more specific than the other and both can match the same request",
				i, pattern, e.index, e.pattern)
		}
	}
	msg := cause.Error()
	if j := strings.Index(msg, "\n"); j >= 0 {
		msg = msg[:j]
	}
	return fmt.Errorf("proxy: routes[%d] %q: invalid pattern: %s", i, pattern, msg)
}

// match returns the rule for r, whose path must already be normalised.
// Precedence is ServeMux's. A path without trailing slash that ServeMux
// would redirect to its subtree ("/admin" for "/admin/") is judged by the
// subtree's rule, the stricter reading; other misses get the default rule.
func (rs *ruleSet) match(r *http.Request) *rule {
	return rs.memo.match(rs, r)
}

// caseSafe reports whether r, judged by ru, would be judged by the same
// rule if letter case in its path were ignored. When not, an upstream
// that ignores case (Express and ASP.NET Core by default, IIS, macOS and
// Windows file systems) could serve "/ADMIN/users" as "/admin/users"
// while the proxy applied another rule's policy.
func (rs *ruleSet) caseSafe(r *http.Request, ru *rule) bool {
	p := r.URL.Path
	if !rs.upperPatterns && caseFolded(p) {
		return true // everything is folded already
	}
	r2 := *r
	u := *r.URL
	u.Path, u.RawPath = foldCase(p), ""
	r2.URL = &u
	return rs.matchIn(rs.folded, rs.foldedExclude, &r2) == ru
}

func (rs *ruleSet) matchIn(mux *http.ServeMux, exclude map[string]*rule, r *http.Request) *rule {
	if exclude != nil {
		if ru, ok := exclude[r.URL.Path]; ok {
			return ru
		}
	}
	h, _ := mux.Handler(r)
	if ru, ok := h.(*rule); ok {
		return ru
	}
	p := r.URL.Path
	if p != "" && p[len(p)-1] != '/' {
		r2 := *r
		u := *r.URL
		u.Path = p + "/"
		u.RawPath = ""
		r2.URL = &u
		if h, _ := mux.Handler(&r2); h != nil {
			if ru, ok := h.(*rule); ok && strings.HasSuffix(ru.pattern, "/") {
				return ru
			}
		}
	}
	return rs.def
}

// table renders the compiled rules for check-config, in the order they
// are consulted: the /auth routes (authPrefix, "" when not served), the
// excluded paths, the rules (ServeMux precedence among them), the default.
func (rs *ruleSet) table(authPrefix string) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tMATCH\tPOLICY")
	if authPrefix != "" {
		fmt.Fprintf(tw, "-\t%s/\tidp /auth routes (include_routes), served by the proxy, never forwarded\n", strings.TrimRight(authPrefix, "/"))
	}
	excluded := make([]string, 0, len(rs.exclude))
	for p := range rs.exclude {
		excluded = append(excluded, p)
	}
	sort.Strings(excluded)
	for _, p := range excluded {
		fmt.Fprintf(tw, "-\t%s\t%s\n", p, rs.exclude[p].desc)
	}
	for _, r := range rs.rules {
		fmt.Fprintf(tw, "%d\t%s\t%s\n", r.index, r.pattern, r.desc)
	}
	fmt.Fprintf(tw, "-\t(unmatched)\t%s\n", rs.def.desc)
	tw.Flush()
	return b.String()
}
