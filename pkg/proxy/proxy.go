package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/problem"
	"github.com/idp-proxy/idp-proxy/internal/statuswriter"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
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
	// Transport carries requests to the upstream. [an *http.Transport
	// tuned for a sidecar: upstream.max_idle_conns_per_host idle
	// connections, upstream.timeout for response headers, no compression
	// of its own, no environment proxy]
	Transport http.RoundTripper
	// IDPHTTPClient makes the calls to the identity provider. [pkg/idp's]
	IDPHTTPClient *http.Client
}

// Proxy is the authenticating reverse proxy: an http.Handler that judges
// each request by the compiled rules, verifies its token with pkg/idp and
// forwards it with identity headers. Create it with New.
type Proxy struct {
	cfg         Config
	plugin      *idp.Plugin
	rules       *ruleSet
	headers     *headerRules
	upstream    *url.URL
	rp          *httputil.ReverseProxy
	metrics     *metrics
	log         *slog.Logger
	access      *slog.Logger
	tokenCookie string                      // the token cookie, removed from forwarded Cookie headers ("" in header mode)
	cop         *http.CrossOriginProtection // COOKIE mode only: see crossOrigin
	authPrefix  string                      // "" unless include_routes
	authRoutes  http.Handler                // nil unless include_routes
	authRule    *rule
	badRule     *rule // label of requests rejected before any rule
	maxBody     int64

	ridPrefix string
	ridSeq    atomic.Uint64
}

// compiled is everything New derives from a Config without side effects.
type compiled struct {
	cfg      Config
	idpCfg   idp.Config
	rules    *ruleSet
	headers  *headerRules
	upstream *url.URL
}

func compile(cfg Config) (*compiled, error) {
	cfg = cfg.withDefaults()
	var errs []error
	if err := cfg.validate(); err != nil {
		errs = append(errs, err)
	}
	ic, err := cfg.PluginConfig()
	if err != nil {
		errs = append(errs, err)
	} else if err := validatePluginConfig(ic); err != nil {
		errs = append(errs, err)
	}
	rs, err := compileRules(cfg.Routes, cfg.DefaultPolicy, cfg.IDP.ExcludedPaths)
	if err != nil {
		errs = append(errs, err)
	}
	if cfg.IDP.IncludeRoutes {
		for i, rc := range cfg.Routes {
			if p := patternPath(rc.Match); isUnder(p, cfg.IDP.AuthPrefix) {
				errs = append(errs, fmt.Errorf("proxy: routes[%d] %q lies under idp.auth_prefix %q, which the /auth routes serve (include_routes): it would never apply",
					i, rc.Match, cfg.IDP.AuthPrefix))
			}
		}
		for _, e := range cfg.IDP.ExcludedPaths {
			if isUnder(e, cfg.IDP.AuthPrefix) {
				errs = append(errs, fmt.Errorf("proxy: idp.excluded_paths: %q lies under idp.auth_prefix %q, which the /auth routes serve", e, cfg.IDP.AuthPrefix))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	u, _ := url.Parse(cfg.Upstream.URL) // validated
	return &compiled{cfg: cfg, idpCfg: ic, rules: rs, headers: newHeaderRules(cfg.Headers), upstream: u}, nil
}

// validatePluginConfig lets idp.New check ic, with an HTTP client that
// refuses every request, so that nothing reaches the provider.
func validatePluginConfig(ic idp.Config) error {
	ic.HTTPClient = &http.Client{Transport: refuseTransport{}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p, err := idp.New(ctx, ic)
	if err != nil {
		return err
	}
	return p.Close()
}

type refuseTransport struct{}

func (refuseTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("proxy: configuration check: no network")
}

// Check validates cfg completely without contacting the provider or the
// upstream, and returns the compiled rule table as check-config prints it.
// The error lists every problem found, one per line.
func Check(cfg Config) (string, error) {
	c, err := compile(cfg)
	if err != nil {
		return "", err
	}
	return c.table(), nil
}

func (c *compiled) table() string {
	prefix := ""
	if c.cfg.IDP.IncludeRoutes {
		prefix = c.cfg.IDP.AuthPrefix
	}
	return c.rules.table(prefix)
}

// New compiles cfg and returns a Proxy. Like idp.New it does not wait for
// the provider: until its keys are loaded, protected routes answer 503
// and /readyz reports not ready. Background work stops with ctx or Close.
func New(ctx context.Context, cfg Config, o Options) (*Proxy, error) {
	c, err := compile(cfg)
	if err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c.idpCfg.Logger = log
	c.idpCfg.HTTPClient = o.IDPHTTPClient
	plugin, err := idp.New(ctx, c.idpCfg)
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		cfg:      c.cfg,
		plugin:   plugin,
		rules:    c.rules,
		headers:  c.headers,
		upstream: c.upstream,
		metrics:  newMetrics(plugin),
		log:      log,
		access:   o.AccessLog,
		authRule: &rule{index: -1, pattern: c.cfg.IDP.AuthPrefix + "/", desc: "idp /auth routes", label: "(auth)"},
		badRule:  &rule{index: -1, pattern: "(rejected)", desc: "rejected before matching", label: "(invalid)"},
		maxBody:  c.cfg.Server.MaxBodyBytes,
	}
	if c.idpCfg.TokenLocation == idp.TokenLocationCookie {
		p.tokenCookie = plugin.Config().CookieName
		p.cop = http.NewCrossOriginProtection()
	}
	if c.cfg.IDP.IncludeRoutes {
		p.authPrefix = c.cfg.IDP.AuthPrefix
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

	var b [4]byte
	_, _ = rand.Read(b[:])
	p.ridPrefix = hex.EncodeToString(b[:]) + "-"

	tr := o.Transport
	if tr == nil {
		tr = newTransport(c.cfg.Upstream)
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:        p.rewrite,
		Transport:      timedTransport{rt: tr, ok: p.metrics.upstreamOK, fail: p.metrics.upstreamFail},
		ErrorHandler:   p.upstreamError,
		ModifyResponse: dropUpstreamRequestID,
		BufferPool:     newBufferPool(),
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return p, nil
}

// newTransport returns the upstream transport of a sidecar: one upstream,
// many concurrent requests, loopback or a nearby host.
func newTransport(c UpstreamConfig) *http.Transport {
	return &http.Transport{
		Proxy:                  nil, // the upstream is next door: never an environment proxy
		DialContext:            (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           2 * c.MaxIdleConnsPerHost,
		MaxIdleConnsPerHost:    c.MaxIdleConnsPerHost,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  1 * time.Second,
		ResponseHeaderTimeout:  c.Timeout,
		MaxResponseHeaderBytes: 1 << 20,
		// Pass the client's Accept-Encoding and the upstream's encoding
		// through untouched instead of decompressing.
		DisableCompression: true,
	}
}

// Plugin returns the proxy's pkg/idp plugin.
func (p *Proxy) Plugin() *idp.Plugin { return p.plugin }

// Table returns the compiled rule table, as check-config prints it.
func (p *Proxy) Table() string { return p.rules.table(p.authPrefix) }

// Close stops the plugin's background key refreshes.
func (p *Proxy) Close() error { return p.plugin.Close() }

// ServeHTTP judges and forwards one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rid := p.requestID(r.Header["X-Request-Id"])
	ridv := []string{rid}
	r.Header["X-Request-Id"] = ridv // read by rewrite; the client's is replaced
	w.Header()["X-Request-Id"] = ridv
	if p.access == nil || !p.access.Enabled(r.Context(), slog.LevelInfo) {
		rl, dec, _ := p.serve(w, r)
		rl.metrics.inc(dec)
		return
	}
	sw := &statuswriter.Writer{ResponseWriter: w}
	rl, dec, fwd := p.serve(sw, r)
	rl.metrics.inc(dec)
	p.logAccess(r, fwd, sw, rid, rl, dec, time.Since(start))
}

// logAccess writes the access record of a request: never a token, a
// header value or the query string.
func (p *Proxy) logAccess(r, fwd *http.Request, sw *statuswriter.Writer, rid string, rl *rule, dec decision, d time.Duration) {
	user := ""
	if u, ok := idp.UserFrom(fwd.Context()); ok {
		user = u.Sub
	}
	status := sw.Status
	if status == 0 {
		status = http.StatusOK
	}
	p.access.LogAttrs(r.Context(), slog.LevelInfo, "request",
		slog.String("request_id", rid),
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Int("status", status),
		slog.Int64("bytes", sw.Bytes),
		slog.Duration("duration", d),
		slog.String("rule", rl.label),
		slog.String("decision", dec.String()),
		slog.String("user", user),
		slog.String("remote", r.RemoteAddr))
}

// serve applies the rules and, when they allow it, forwards. It returns
// the rule that judged, the decision and the request as forwarded.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) (*rule, decision, *http.Request) {
	rl, dec, r, ok := p.judge(w, r)
	if !ok {
		return rl, dec, r
	}
	if dec == decAuthRoute {
		p.serveAuthRoutes(w, r)
		return rl, dec, r
	}
	if p.maxBody >= 0 && r.Body != nil && r.Body != http.NoBody {
		if r.ContentLength > p.maxBody {
			problem.Write(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body exceeds %d bytes", p.maxBody))
			return rl, decBadRequest, r
		}
		r.Body = http.MaxBytesReader(w, r.Body, p.maxBody)
	}
	p.rp.ServeHTTP(w, r)
	return rl, dec, r
}

// judge checks the request's method and path and applies the rules. When
// the request may go on (to the upstream, or to the /auth routes when dec
// is decAuthRoute) it returns ok and the request carrying the identity;
// otherwise it has written the refusal to w.
func (p *Proxy) judge(w http.ResponseWriter, r *http.Request) (rl *rule, dec decision, out *http.Request, ok bool) {
	switch r.Method {
	case http.MethodConnect, http.MethodTrace:
		w.Header().Set("Allow", allowedMethods)
		problem.Write(w, http.StatusMethodNotAllowed, r.Method+" is not supported by the proxy")
		return p.badRule, decBadRequest, r, false
	}
	if !upperCase(r.Method) {
		// Rules match methods case-sensitively ("POST /shorten" does not
		// match "post"), but upstreams such as Django, Flask and Express
		// upper-case the method: "post /shorten" would be judged by another
		// rule (or the default) and served as POST.
		w.Header().Set("Allow", allowedMethods)
		problem.Write(w, http.StatusMethodNotAllowed, "method names are case-sensitive and must be upper case")
		return p.badRule, decBadRequest, r, false
	}
	// Host patterns match ServeMux's exact host, but host names are
	// case-insensitive and "host." is "host": judge and forward one
	// spelling.
	r.Host = canonicalHost(r.Host)
	if reason := checkPath(r.URL.EscapedPath()); reason != "" {
		problem.Write(w, http.StatusBadRequest, reason)
		return p.badRule, decBadRequest, r, false
	}
	if p.authRoutes != nil && isUnder(r.URL.Path, p.authPrefix) {
		return p.authRule, decAuthRoute, r, true
	}
	rl = p.rules.match(r)
	if !p.rules.caseSafe(r, rl) {
		problem.Write(w, http.StatusBadRequest, "the path differs only in letter case from a path another rule protects")
		return p.badRule, decBadRequest, r, false
	}
	switch rl.policy {
	case policyDeny:
		problem.Write(w, http.StatusForbidden, "access to this path is denied by the proxy's policy")
		return rl, decDenied, r, false
	case policyPublic:
		if _, err := p.plugin.TokenFromRequest(r); !errors.Is(err, idp.ErrNoToken) && !p.crossOrigin(r) {
			// A token on a public route: forward its identity when it is
			// valid, otherwise go on anonymously (rewrite drops it).
			if r2, err := p.authenticate(r); err == nil {
				r = r2
			}
		}
		return rl, decPublic, r, true
	}
	if p.crossOrigin(r) {
		problem.Write(w, http.StatusForbidden, "cross-origin request refused: the token cookie is not accepted on cross-origin POST, PUT, PATCH or DELETE")
		return rl, decForbidden, r, false
	}
	r2, err := p.authenticate(r)
	if err != nil {
		p.plugin.WriteError(w, r, err)
		return rl, decisionOf(err), r, false
	}
	if len(rl.guards) > 0 {
		u, _ := idp.UserFrom(r2.Context())
		for _, g := range rl.guards {
			if !g.Allow(u) {
				p.plugin.WriteError(w, r2, idp.ErrForbidden)
				return rl, decForbidden, r2, false
			}
		}
	}
	return rl, decAllowed, r2, true
}

// allowedMethods is the Allow header of the proxy's 405 answers.
const allowedMethods = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"

// Decision is how the proxy judges a request, as Decide reports it.
type Decision struct {
	Rule     string `json:"rule"`     // the rule's pattern, or (default), (excluded) PATH, (auth), (invalid)
	Decision string `json:"decision"` // allowed, public, no_token, invalid_token, forbidden, denied, unavailable, bad_request, auth_route
	Status   int    `json:"status"`   // the proxy's answer, or 0 when the request would be forwarded
	User     string `json:"user,omitempty"`
}

// Decide reports how the proxy would judge method and target (a path
// with an optional query) carrying the access token raw ("" for none),
// without forwarding anything.
func (p *Proxy) Decide(ctx context.Context, method, target, raw string) (Decision, error) {
	r, err := http.NewRequestWithContext(ctx, method, "http://idp-proxy.invalid"+target, nil)
	if err != nil || !strings.HasPrefix(target, "/") {
		return Decision{}, fmt.Errorf("proxy: %s %q is not a request", method, target)
	}
	r.Host = ""
	if raw != "" {
		if p.tokenCookie != "" {
			r.AddCookie(&http.Cookie{Name: p.tokenCookie, Value: raw})
		} else {
			r.Header.Set("Authorization", "Bearer "+raw)
		}
	}
	w := &discardWriter{header: http.Header{}}
	rl, dec, out, ok := p.judge(w, r)
	d := Decision{Rule: rl.label, Decision: dec.String()}
	if !ok {
		d.Status = w.status
	}
	if u, found := idp.UserFrom(out.Context()); found {
		d.User = u.Sub
	}
	return d, nil
}

// discardWriter records the status of an answer and drops the rest.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.header }
func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *discardWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(b), nil
}

// crossOrigin reports whether r is a browser's cross-origin request with
// an unsafe method (net/http's CrossOriginProtection: Sec-Fetch-Site,
// else Origin against Host) that carries the token cookie. In COOKIE
// mode the browser attaches the cookie by itself (SameSite=Lax still
// sends it from sibling subdomains) and the proxy turns it into a bearer
// token, which upstreams rightly treat as immune to CSRF.
func (p *Proxy) crossOrigin(r *http.Request) bool {
	return p.cop != nil && p.cop.Check(r) != nil && len(r.CookiesNamed(p.tokenCookie)) > 0
}

func (p *Proxy) authenticate(r *http.Request) (*http.Request, error) {
	t0 := time.Now()
	r2, err := p.plugin.Authenticate(r)
	p.metrics.verify.Observe(time.Since(t0).Seconds())
	return r2, err
}

func decisionOf(err error) decision {
	switch {
	case errors.Is(err, idp.ErrNoToken):
		return decNoToken
	case errors.Is(err, idp.ErrUnavailable):
		return decUnavailable
	case errors.Is(err, idp.ErrForbidden):
		return decForbidden
	default:
		return decInvalid
	}
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

// isUnder reports whether path is prefix or below it.
func isUnder(path, prefix string) bool {
	return path == prefix || (len(path) > len(prefix) && strings.HasPrefix(path, prefix) && path[len(prefix)] == '/')
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

// rewrite builds the upstream request. ReverseProxy has already removed
// the hop-by-hop headers (those named in Connection included) and the
// client's X-Forwarded-For/-Host/-Proto and Forwarded; nothing set here
// can be removed by the client.
func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(p.upstream)
	out := pr.Out.Header
	if up := out["Upgrade"]; len(up) > 0 && !(len(up) == 1 && strings.EqualFold(up[0], "websocket")) {
		// Only WebSocket upgrades pass; others (h2c, TLS, ...) could
		// tunnel past the rules. The request goes on as plain HTTP.
		delete(out, "Upgrade")
		delete(out, "Connection")
	}
	p.headers.stripAll(out)
	in := pr.In.Header
	if p.headers.trustForwarded {
		if v := in["X-Forwarded-For"]; len(v) > 0 {
			out["X-Forwarded-For"] = v
		}
	}
	pr.SetXForwarded()
	if p.headers.trustForwarded {
		for _, k := range [...]string{"X-Forwarded-Host", "X-Forwarded-Proto", "Forwarded"} {
			if v := in[k]; len(v) > 0 {
				out[k] = v
			}
		}
	}
	out["X-Request-Id"] = in["X-Request-Id"]
	if p.tokenCookie != "" {
		stripCookie(out, p.tokenCookie)
	}
	ctx := pr.In.Context()
	if raw, ok := idp.RawTokenFrom(ctx); ok {
		u, _ := idp.UserFrom(ctx)
		pl, _ := idp.PayloadFrom(ctx)
		p.headers.setIdentity(out, u, raw, bearerValue(in, raw), pl != nil && pl.EmailVerified)
	}
}

// upstreamError answers failures to reach the upstream: 504 on timeout,
// 413 when the body exceeded the limit, 502 otherwise.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	var mbe *http.MaxBytesError
	var ne net.Error
	status, detail := http.StatusBadGateway, "the upstream service is unavailable"
	switch {
	case errors.As(err, &mbe):
		status, detail = http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body exceeds %d bytes", mbe.Limit)
	case r.Context().Err() != nil:
		// The client went away; nobody reads this answer.
		p.log.Debug("client gone before the upstream answered", "request_id", r.Header.Get("X-Request-Id"), "error", err)
		problem.Write(w, http.StatusBadGateway, detail)
		return
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		status, detail = http.StatusGatewayTimeout, "the upstream service did not answer in time"
	}
	p.log.Warn("upstream request failed", "request_id", r.Header.Get("X-Request-Id"),
		"method", r.Method, "path", r.URL.Path, "status", status, "error", err)
	problem.Write(w, status, detail)
}

// dropUpstreamRequestID keeps the proxy's X-Request-Id the only one in the
// response.
func dropUpstreamRequestID(resp *http.Response) error {
	delete(resp.Header, "X-Request-Id")
	return nil
}

// requestID returns the client's X-Request-Id when it is one short token
// of [A-Za-z0-9._:-], else a new one.
func (p *Proxy) requestID(sent []string) string {
	if len(sent) == 1 && validRequestID(sent[0]) {
		return sent[0]
	}
	var buf [32]byte
	b := append(buf[:0], p.ridPrefix...)
	n := p.ridSeq.Add(1)
	const digits = "0123456789abcdef"
	var tmp [16]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = digits[n&0xf]
		n >>= 4
		if n == 0 {
			break
		}
	}
	b = append(b, tmp[i:]...)
	return string(b)
}

func validRequestID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// bufferPool lends ReverseProxy its 32 KiB copy buffers.
type bufferPool struct{ pool sync.Pool }

func newBufferPool() *bufferPool {
	return &bufferPool{pool: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}
}

func (bp *bufferPool) Get() []byte  { return *bp.pool.Get().(*[]byte) }
func (bp *bufferPool) Put(b []byte) { bp.pool.Put(&b) }
