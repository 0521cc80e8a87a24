package proxy

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/idp-proxy/idp-proxy/internal/urlpath"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// compiled is everything New derives from a Config and the plugin's
// settings without side effects.
type compiled struct {
	cfg        Config
	rules      *ruleSet
	headers    *headerRules
	upstream   *url.URL // nil: forward-auth only, or upstreams
	upstreams  *upstreamSet
	authPrefix string // "" unless the plugin serves its /auth routes
	fa         *forwardAuth
	certs      *clientCerts // nil: no client_cert.header
}

// compile checks cfg against the plugin configuration ic (defaults
// applied) and compiles the rules.
func compile(cfg Config, ic idp.Config) (*compiled, error) {
	cfg = cfg.withDefaults()
	var errs []error
	if err := cfg.validate(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, cfg.needsClientSecret(ic.ClientSecret)...)
	for _, p := range ic.ExcludedPaths {
		if reason := checkPath(p); reason != "" {
			errs = append(errs, fieldErrorf(fields("IDP.ExcludedPaths"), "%s: %q: %s", named("IDP.ExcludedPaths"), p, reason))
		}
	}
	errs = append(errs, checkMethods(cfg.Routes, cfg.ExtensionMethods)...)
	rs, err := compileRules(cfg.Routes, cfg.DefaultPolicy, ic.ExcludedPaths, issuerNames(ic)...)
	if err != nil {
		errs = append(errs, err)
	}
	ups, err := compileUpstreams(cfg)
	if err != nil {
		errs = append(errs, err)
	}
	authPrefix := ""
	if ic.IncludeRoutes {
		authPrefix = ic.AuthPrefix
		if reason := checkPath(authPrefix); reason != "" {
			errs = append(errs, fieldErrorf(fields("IDP.AuthPrefix"), "%s %q: %s", named("IDP.AuthPrefix"), authPrefix, reason))
		} else if authPrefix == "/" {
			errs = append(errs, fieldErrorf(fields("IDP.AuthPrefix"), "%s must not be \"/\" when %s is true: it would hide the upstream", named("IDP.AuthPrefix"), leaf("IDP.IncludeRoutes")))
		}
		for i, rc := range cfg.Routes {
			if p := patternPath(rc.Match); urlpath.Under(p, authPrefix) {
				errs = append(errs, fieldErrorf(fields("IDP.AuthPrefix"), "%s %q lies under %s %q, which the /auth routes serve (%s): it would never apply",
					named("Routes[%d]", i), rc.Match, named("IDP.AuthPrefix"), authPrefix, leaf("IDP.IncludeRoutes")))
			}
		}
		for _, e := range ic.ExcludedPaths {
			if urlpath.Under(e, authPrefix) {
				errs = append(errs, fieldErrorf(fields("IDP.ExcludedPaths", "IDP.AuthPrefix"), "%s: %q lies under %s %q, which the /auth routes serve", named("IDP.ExcludedPaths"), e, named("IDP.AuthPrefix"), authPrefix))
			}
		}
	}
	certs, err := compileClientCerts(cfg.ClientCert)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	fa, err := compileForwardAuth(cfg.ForwardAuth, ic.AuthPrefix)
	if err != nil {
		return nil, err
	}
	var u *url.URL
	if cfg.Upstream.URL != "" {
		u, _ = url.Parse(cfg.Upstream.URL) // validated
	}
	c := &compiled{cfg: cfg, rules: rs, headers: newHeaderRules(cfg.Headers), upstream: u, upstreams: ups, authPrefix: authPrefix, fa: fa, certs: certs}
	if certs != nil {
		certs.stripFrom(c.headers, ups)
	}
	return c, nil
}

// Compiled is a Config checked and its rules compiled against the plugin
// configuration it will run with, by Compile: what check-config prints
// (Table) and what NewCompiled serves, so that a program compiles once.
type Compiled struct {
	c  *compiled
	ic idp.Config // defaults applied
	// used marks a Compiled already given to NewCompiled: the proxy
	// attaches its metrics to the compiled rules, which therefore serve
	// one proxy only.
	used atomic.Bool
}

// Compile validates cfg together with the plugin configuration ic it will
// run with (idp.Config.Validate, then the rules against its excluded paths
// and auth prefix) and compiles the rules, without building a plugin or
// contacting anything. The error lists every problem found, one per line.
func Compile(cfg Config, ic idp.Config) (*Compiled, error) {
	var errs []error
	if idc, err := idp.Compile(ic); err != nil {
		errs = append(errs, err)
		ic = ic.WithDefaults() // the rules are still checked against it
	} else {
		ic = idc.Config()
	}
	c, err := compile(cfg, ic)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &Compiled{c: c, ic: ic}, nil
}

// Table returns the compiled rule table in the order requests are judged,
// as check-config prints it.
func (c *Compiled) Table() string { return c.c.rules.table(c.c.authPrefix) }

// sameCompileInputs reports whether the plugin configuration p (defaults
// applied) agrees with c's in every field compile reads.
func (c *Compiled) sameCompileInputs(p idp.Config) bool {
	return p.IncludeRoutes == c.ic.IncludeRoutes && p.AuthPrefix == c.ic.AuthPrefix &&
		slices.Equal(p.ExcludedPaths, c.ic.ExcludedPaths) && slices.Equal(issuerNames(p), issuerNames(c.ic))
}

// issuerNames returns the names of the trusted issuers of ic (defaults
// applied), the primary first: the names rules may list in issuers.
func issuerNames(ic idp.Config) []string {
	names := make([]string, 0, 1+len(ic.Issuers))
	names = append(names, ic.IssuerName)
	for _, t := range ic.Issuers {
		names = append(names, t.Name)
	}
	return names
}

// patternPath returns the path of a ServeMux pattern "[METHOD ][HOST]/PATH".
func patternPath(pattern string) string {
	if _, rest, ok := strings.Cut(strings.TrimSpace(pattern), " "); ok {
		pattern = strings.TrimLeft(rest, " \t")
	}
	if i := strings.IndexByte(pattern, '/'); i >= 0 {
		return pattern[i:]
	}
	return ""
}
