package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/idp-proxy/idp-proxy/internal/problem"
	"github.com/idp-proxy/idp-proxy/internal/statuswriter"
	"github.com/idp-proxy/idp-proxy/internal/tracing"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/dpop"
	"github.com/idp-proxy/idp-proxy/pkg/idp/exchange"
)

// Options configure New. Zero values get the defaults in brackets.
type Options struct {
	// Logger receives the proxy's and the idp plugin's logs; tokens are
	// never logged. [discard]
	Logger *slog.Logger
	// AccessLog receives one record per request (request id, method, path
	// without query, status, bytes, duration, rule, decision, user), never
	// a token or a header value. [none]
	AccessLog *slog.Logger
	// Metrics receives the proxy's metrics; share one between the
	// successive proxies of a process so that reloads keep the counters.
	// [a new Metrics, served by OpsHandler]
	Metrics *Metrics
	// Transport carries requests to the upstream. [an *http.Transport
	// tuned for a sidecar: upstream.max_idle_conns_per_host idle
	// connections, upstream.timeout for response headers, no compression
	// of its own, no environment proxy]
	Transport http.RoundTripper
	// TracerProvider records OpenTelemetry spans: one server span per
	// request (method, path without query, rule, decision, status), a
	// proxy.authorize span (rule, decision, issuer, verified-token cache
	// hit or miss) and a proxy.upstream client span, whose W3C trace
	// context (traceparent, tracestate) is sent upstream. No span carries
	// a token, a cookie, a query string or a claim value. Give the same
	// provider to the plugin (idp.Config.TracerProvider) for its key
	// fetches and token calls. [nil: no tracing, and a client's
	// traceparent is forwarded untouched, as any other header]
	TracerProvider trace.TracerProvider
	// TrustedTraceParents are the callers (by peer address) whose
	// traceparent the proxy continues: its request span joins their
	// trace. From any other caller a traceparent starts a new trace, with
	// a link to the caller's span, so that nobody can join the service's
	// traces or force their sampling. [none]
	TrustedTraceParents []netip.Prefix
}

// Proxy is the authenticating reverse proxy: an http.Handler that judges
// each request by the compiled rules, verifies its token with pkg/idp and
// forwards it with identity headers. Create it with New.
type Proxy struct {
	cfg               Config
	plugin            *idp.Plugin
	rules             *ruleSet
	headers           *headerRules
	upstream          *url.URL
	rp                *httputil.ReverseProxy
	grpc              *grpcForward           // gRPC calls to upstream
	rpCORS            *httputil.ReverseProxy // rp for the routes with a CORS policy; nil without any
	grpcCORS          *grpcForward           // grpc for the routes with a CORS policy; nil without any
	ups               *upstreamSet           // Config.Upstreams; nil with one upstream
	metrics           *Metrics
	dpopDefault       dpop.Mode // idp.dpop.mode: the rules without routes[].dpop (dpop.go)
	log               *slog.Logger
	access            *slog.Logger
	tokenCookie       string          // the token cookie, removed from forwarded Cookie headers ("" in header mode)
	credentialCookies []string        // the token cookie (COOKIE mode), the session cookie and its chunks: removed from forwarded Cookie headers
	preflightRule     *rule           // CORS preflights let through (Config.SkipAuthPreflight)
	fa                *forwardAuth    // nil unless Config.ForwardAuth.Enabled
	certs             *clientCerts    // nil unless Config.ClientCert.Header
	challenge         string          // the Bearer challenge of the proxy's own 401s
	verifyRule        *rule           // forward-auth verify requests
	reserved          reservedCookies // cookies the upstream may not set
	authPrefix        string          // "" unless include_routes
	authRoutes        http.Handler    // nil unless include_routes
	authRule          *rule
	badRule           *rule // label of requests rejected before any rule
	maxBody           int64
	ts                *tracing.Server // nil: no tracing
	tracer            trace.Tracer
	issuers           []issuerMetrics  // by the plugin's issuers, the primary first
	probes            []upstreamProbe  // the upstreams /readyz asks, in configuration order
	issuer            *assertionIssuer // discovery and JWKS of the assertions; nil without
	issuerRule        *rule
	exchanger         *exchange.Exchanger // the exchange upstreams'; nil without

	rids requestIDs
}

// New compiles cfg and returns a Proxy that judges requests with plugin
// (built by the caller with idp.New, and closed by the caller after the
// proxy stops serving). Like idp.New it does not wait for the provider:
// until the plugin's keys are loaded, protected routes answer 503 and
// /readyz reports not ready. With the plugin's IncludeRoutes on, the proxy
// serves its /auth routes itself.
func New(plugin *idp.Plugin, cfg Config, o Options) (*Proxy, error) {
	if plugin == nil {
		return nil, errors.New("proxy: New needs an *idp.Plugin")
	}
	c, err := compile(cfg, plugin.Config())
	if err != nil {
		return nil, err
	}
	return build(plugin, c, o)
}

// NewCompiled is New with rules compiled by Compile, against the
// configuration plugin was built from. A Compiled serves one Proxy.
func NewCompiled(plugin *idp.Plugin, c *Compiled, o Options) (*Proxy, error) {
	if plugin == nil {
		return nil, errors.New("proxy: NewCompiled needs an *idp.Plugin")
	}
	if !c.sameCompileInputs(plugin.Config()) {
		return nil, errors.New("proxy: NewCompiled: the plugin's IncludeRoutes, AuthPrefix, ExcludedPaths or issuer names differ from those the rules were compiled against")
	}
	if c.used.Swap(true) {
		return nil, errors.New("proxy: NewCompiled: this Compiled already serves a Proxy: compile again")
	}
	return build(plugin, c.c, o)
}

// build makes the Proxy of compiled rules c.
func build(plugin *idp.Plugin, c *compiled, o Options) (*Proxy, error) {
	ic := plugin.Config()
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Proxy{
		cfg:      c.cfg,
		plugin:   plugin,
		rules:    c.rules,
		headers:  c.headers,
		upstream: c.upstream,
		ups:      c.upstreams,
		metrics:  o.Metrics,
		log:      log,
		access:   o.AccessLog,
		authRule: &rule{index: -1, pattern: ic.AuthPrefix + "/", desc: "idp /auth routes", label: "(auth)"},
		badRule:  &rule{index: -1, pattern: "(rejected)", desc: "rejected before matching", label: "(invalid)"},
		maxBody:  c.cfg.MaxBodyBytes,
		fa:       c.fa,
		certs:    c.certs,

		dpopDefault: ic.DPoP.Mode,
	}
	p.challenge = bearerChallenge(plugin)
	p.verifyRule = &rule{index: -1, pattern: "GET " + p.verifyPathOrDefault(), policy: policyPublic,
		desc: "forward-auth verdicts (forward_auth)", label: "(verify)"}
	if p.metrics == nil {
		p.metrics = NewMetrics()
	}
	p.metrics.plugin.Store(plugin)
	cookies := plugin.Cookies()
	p.reserved = newReservedCookies(cookies.Names)
	p.credentialCookies = cookies.Session
	p.preflightRule = &rule{index: -1, pattern: "OPTIONS (CORS preflight)", policy: policyPublic,
		desc: "public (skip_auth_preflight)", label: "(preflight)"}
	if ic.TokenLocation == idp.TokenLocationCookie {
		p.tokenCookie = ic.CookieName
		p.credentialCookies = append(p.credentialCookies, ic.CookieName)
	}
	if c.authPrefix != "" {
		p.authPrefix = c.authPrefix
		p.authRoutes = plugin.Routes()
	}
	for _, r := range p.rules.rules {
		r.metrics = p.metrics.forRule(r.label)
	}
	for _, r := range p.rules.exclude {
		r.metrics = p.metrics.forRule(r.label)
	}
	p.rules.def.metrics = p.metrics.forRule(p.rules.def.label)
	p.authRule.metrics = p.metrics.forRule(p.authRule.label)
	p.badRule.metrics = p.metrics.forRule(p.badRule.label)
	p.preflightRule.metrics = p.metrics.forRule(p.preflightRule.label)
	p.verifyRule.metrics = p.metrics.forRule(p.verifyRule.label)
	p.issuerRule = &rule{index: -1, pattern: "GET (assertion issuer)", policy: policyPublic,
		desc: "public (the assertions' discovery and JWKS)", label: "(assertion-issuer)"}
	p.issuerRule.metrics = p.metrics.forRule(p.issuerRule.label)
	p.issuers = p.metrics.forIssuers(plugin.IssuerNames())

	p.rids.init()
	if p.ts = tracing.NewServer(o.TracerProvider, tracerName, o.TrustedTraceParents); p.ts != nil {
		p.tracer = p.ts.Tracer()
	}

	if err := p.buildCredentials(); err != nil {
		return nil, err
	}
	if p.ups != nil {
		for _, up := range p.ups.all {
			up.p = p
			tr, err := p.upstreamTransport(o.Transport, up.cfg)
			if err != nil {
				return nil, err
			}
			up.rp = p.newReverseProxy(p.traced(tr), up.rewrite)
			up.grpc = p.newGRPCForward(tr, up.cfg, up.rewrite)
			up.rpCORS = p.corsForwarder(up.rp)
			up.grpcCORS = p.corsGRPC(up.grpc)
			p.probes = append(p.probes, upstreamProbe{match: up.match, url: up.url, rt: tr})
		}
		return p, nil
	}
	if p.upstream == nil {
		return p, nil // forward-auth only: nothing is forwarded
	}
	tr, err := p.upstreamTransport(o.Transport, c.cfg.Upstream)
	if err != nil {
		return nil, err
	}
	p.probes = []upstreamProbe{{url: p.upstream, rt: tr, required: true}}
	rewrite := func(pr *httputil.ProxyRequest) { p.rewrite(pr, p.upstream, p.headers) }
	p.rp = p.newReverseProxy(p.traced(tr), rewrite)
	p.grpc = p.newGRPCForward(tr, c.cfg.Upstream, rewrite)
	p.rpCORS = p.corsForwarder(p.rp)
	p.grpcCORS = p.corsGRPC(p.grpc)
	return p, nil
}

// upstreamTransport returns the transport to an upstream: tr when the
// caller gave one, else a new one of c's settings.
func (p *Proxy) upstreamTransport(tr http.RoundTripper, c UpstreamConfig) (http.RoundTripper, error) {
	if tr != nil {
		return tr, nil
	}
	t, err := newTransport(c)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// traced returns tr, recording client spans when tracing (readiness
// checks use tr itself: a probe every few seconds is no trace).
func (p *Proxy) traced(tr http.RoundTripper) http.RoundTripper {
	if p.tracer != nil {
		return tracedTransport{rt: tr}
	}
	return tr
}

// Plugin returns the proxy's pkg/idp plugin.
func (p *Proxy) Plugin() *idp.Plugin { return p.plugin }

// Table returns the compiled rule table, as check-config prints it.
func (p *Proxy) Table() string { return p.rules.table(p.authPrefix) }

// ServeHTTP judges and forwards one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rid := p.rids.id(r.Header["X-Request-Id"])
	ridv := []string{rid}
	r.Header["X-Request-Id"] = ridv // read by rewrite; the client's is replaced
	w.Header()["X-Request-Id"] = ridv
	var span trace.Span
	if p.ts != nil {
		r, span = p.startRequestSpan(r, rid)
	}
	sw := writerPool.Get().(*statuswriter.Writer)
	*sw = statuswriter.Writer{ResponseWriter: w}
	v := p.serve(sw, r)
	v.rule.metrics.inc(v.dec)
	if id := v.identity(); id != nil {
		p.countIssuer(id.User.IssuerName, v.dec)
	}
	d := time.Since(start)
	status := sw.Status
	if status == 0 {
		status = http.StatusOK
	}
	p.metrics.observe(r.Method, status, d)
	if span != nil {
		endRequestSpan(span, v, status)
	}
	if p.access != nil && p.access.Enabled(r.Context(), slog.LevelInfo) {
		p.logAccess(r, sw, rid, v, d)
	}
	*sw = statuswriter.Writer{}
	writerPool.Put(sw)
}

// countIssuer counts a request with a valid token of the issuer named
// name. The names are few, and the primary's (first) string is the one
// every User of that issuer carries, so the search is a comparison or two.
func (p *Proxy) countIssuer(name string, d decision) {
	for i := range p.issuers {
		if p.issuers[i].name == name {
			p.issuers[i].byDecision[d].Inc()
			return
		}
	}
}

// writerPool recycles the response recorders of ServeHTTP.
var writerPool = sync.Pool{New: func() any { return new(statuswriter.Writer) }}

// logAccess writes the access record of a request: never a token, a
// header value or the query string. A refusal by a rule's clause names it
// ("clause": "claims:tid").
func (p *Proxy) logAccess(r *http.Request, sw *statuswriter.Writer, rid string, v verdict, d time.Duration) {
	user, issuer := "", ""
	if id := v.identity(); id != nil {
		user, issuer = id.User.Sub, id.User.IssuerName
	}
	status := sw.Status
	if status == 0 {
		status = http.StatusOK
	}
	var clause slog.Attr // empty: left out by the handlers
	if v.idp.Clause != "" {
		clause = slog.String("clause", v.idp.Clause) // the rule's wording, never token content
	} else if c := idp.PossessionCheck(v.idp.Err); c != "" {
		clause = slog.String("dpop_check", c) // the check's name, never the proof or the token
	}
	p.access.LogAttrs(r.Context(), slog.LevelInfo, "request",
		slog.String("request_id", rid),
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Int("status", status),
		slog.Int64("bytes", sw.Bytes),
		slog.Duration("duration", d),
		slog.String("rule", v.rule.label),
		slog.String("decision", v.dec.String()),
		clause,
		slog.String("user", user),
		slog.String("issuer", issuer),
		slog.String("remote", r.RemoteAddr))
}

// serve judges r and then answers the refusal, serves the /auth routes or
// forwards. It returns the verdict (its decision updated when the body
// limit refuses the request).
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) verdict {
	// Host patterns match ServeMux's exact host, but host names are
	// case-insensitive and "host." is "host": judge and forward one
	// spelling.
	r.Host = canonicalHost(r.Host)
	closeAfterChunked(w, r)
	if p.certs != nil {
		var bad *verdict
		if r, bad = p.takeClientCert(r, p.fa.isVerify(r.URL.Path)); bad != nil {
			p.refuse(w, r, *bad)
			return *bad
		}
	}
	if p.fa.isVerify(r.URL.Path) {
		v := p.serveVerify(w, r)
		p.answerVerify(w, v)
		return v
	}
	if p.issuer.serves(r.URL.Path) {
		p.issuer.h.ServeHTTP(w, r)
		return verdict{rule: p.issuerRule, dec: decPublic}
	}
	auth := p.servesAuthPath(r.URL.Path)
	rp, rpCORS, grpc, grpcCORS := p.rp, p.rpCORS, p.grpc, p.grpcCORS
	cred := p.headers.cred
	if p.ups != nil {
		up := p.ups.pick(r)
		switch {
		case up != nil:
			rp, rpCORS, grpc, grpcCORS = up.rp, up.rpCORS, up.grpc, up.grpcCORS
			cred = up.headers.cred
		case !auth:
			// Never forwarded, and not judged either: no rule of another
			// host may decide about it. The /auth routes answer on every
			// host (the central callback host needs no upstream).
			v := verdict{rule: p.badRule, dec: decBadRequest, status: http.StatusMisdirectedRequest,
				detail: "no upstream serves this host"}
			p.refuse(w, r, v)
			return v
		}
	}
	v := p.judge(r, auth)
	if c := v.rule.cors; c != nil {
		if v.dec == decPreflight {
			c.preflight(w, r)
			return v
		}
		c.actual(w.Header(), r, v.refused())
		rp, grpc = rpCORS, grpcCORS
	}
	switch {
	case v.refused():
		p.refuse(w, r, v)
		return v
	case v.dec == decAuthRoute:
		p.serveAuthRoutes(w, r)
		return v
	}
	call := grpc != nil && isGRPC(r)
	if p.maxBody >= 0 && r.Body != nil && r.Body != http.NoBody && !call {
		if r.ContentLength > p.maxBody {
			p.plugin.WriteProblem(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body exceeds %d bytes", p.maxBody))
			v.dec = decBadRequest
			return v
		}
		r.Body = http.MaxBytesReader(w, r.Body, p.maxBody)
	}
	ctx := r.Context()
	if r.Body != nil && r.Body != http.NoBody {
		cb := &clientBody{ReadCloser: r.Body}
		r.Body = cb
		ctx = context.WithValue(ctx, clientBodyKey{}, cb) // read by upstreamError
	}
	if v.id != nil {
		ctx = idp.NewContext(ctx, v.id) // read by rewrite
	}
	if cred != nil && cred.tokens != nil && rp != nil {
		var ok bool
		if ctx, v.status, ok = p.withUpstreamToken(ctx, w, r, cred, v.id); !ok {
			return v
		}
	}
	if ctx != r.Context() {
		r = r.WithContext(ctx)
	}
	for _, c := range v.cookies {
		http.SetCookie(w, c) // kept: ReverseProxy adds the upstream's headers to these
	}
	if rp == nil {
		w, done := asGRPC(w, r)
		problem.Write(w, http.StatusNotFound, "this idp-proxy gives forward-auth verdicts only ("+p.fa.verifyPath+"); it forwards nothing")
		done()
		return v
	}
	if call {
		grpc.serve(w, r)
		return v
	}
	rp.ServeHTTP(w, r)
	return v
}

// serveAuthRoutes serves the idp /auth routes in the proxy itself. They
// never reach the upstream; the client's identity and forwarding headers
// are stripped all the same (Authorization is kept: the routes read it).
func (p *Proxy) serveAuthRoutes(w http.ResponseWriter, r *http.Request) {
	r2 := r.Clone(r.Context())
	auth := r2.Header["Authorization"]
	p.headers.stripAll(r2.Header)
	if auth != nil {
		r2.Header["Authorization"] = auth
	}
	p.authRoutes.ServeHTTP(w, r2)
}
