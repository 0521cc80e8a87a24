package idp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/idp-proxy/idp-proxy/pkg/idp/dpop"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/authflow"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/session"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

// Plugin protects handlers with the provider's access tokens. Create it
// with New; it is safe for concurrent use.
type Plugin struct {
	cfg         Config
	issuer      string
	realmQuoted string
	primary     *issuer            // Config's own issuer: sign-in, sessions, routes
	issuers     []*issuer          // every trusted issuer, the primary first
	byURL       map[string]*issuer // issuers by URL; nil with the primary alone
	keys        *keySet            // the primary's
	cache       *tokenCache
	sessions    *session.Manager // nil without Config.Session
	intern      *token.Interner  // claim strings shared between tokens (see token.DecodeClaims)
	excluded    map[string]struct{}
	cop         *http.CrossOriginProtection // the cookies' CSRF check: see TokenFromRequest
	site        *authflow.Site              // where the sign-in lives: callback, prefix, allowed redirect hosts
	tracer      trace.Tracer                // nil without Config.TracerProvider
	dpop        *dpop.Verifier              // proofs of possession (binding.go)
	dpopAlgs    string                      // the DPoP challenge's algs
	sessionDPoP *sessionDPoP                // the sessions' DPoP key (sessiondpop.go); nil without

	// gen is the generation of the trusted key material: bumped whenever
	// any issuer's key set changes, it is the generation the verified-token
	// cache's entries belong to.
	gen            atomic.Uint64
	unknownIssuers atomic.Uint64 // tokens naming no trusted issuer

	stop     context.CancelFunc
	stopped  chan struct{}
	stopOnce sync.Once

	routesOnce sync.Once
	routes     http.Handler // built by Routes
}

// New validates cfg and returns a Plugin. Key discovery starts in the
// background and New does not wait for it: requests that arrive while the
// first key set is being fetched wait for it (at most
// Config.FirstKeysWait, 5 s by default), so the first requests after New
// are served. While the provider cannot be reached, protected requests get
// 503 with Retry-After and Ready reports false; they recover without a
// restart when it comes back. Use WaitReady to block until the keys are
// loaded (before reporting ready, or in a test).
//
// Background work (key refreshes) stops when ctx is done or Close is
// called.
func New(ctx context.Context, cfg Config) (*Plugin, error) {
	c, err := Compile(cfg)
	if err != nil {
		return nil, err
	}
	return newPlugin(ctx, c)
}

// newPlugin is New's work after Compile.
func newPlugin(ctx context.Context, c *Compiled) (*Plugin, error) {
	cfg := c.cfg
	for _, d := range c.deprecated {
		cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "idp: deprecated configuration", slog.String("field", d.field), slog.String("instead", d.instead))
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = defaultHTTPClient(cfg.HTTPTimeout)
	}
	iss := cfg.Issuer()
	p := &Plugin{
		cfg:         cfg,
		issuer:      iss,
		realmQuoted: quoteRealm(cfg.challengeRealm()),
		cache:       newTokenCache(cfg.verifiedCacheSize()),
		intern:      token.NewInterner(),
		excluded:    make(map[string]struct{}, len(cfg.ExcludedPaths)),
		stopped:     make(chan struct{}),
	}
	redirectURI, err := url.Parse(cfg.RedirectURI) // validated above when the routes are on
	if err != nil {
		redirectURI = &url.URL{}
	}
	redirects, _ := authflow.CompileRedirectHosts(cfg.AllowedRedirectHosts)
	p.site = &authflow.Site{RedirectURI: redirectURI, AuthPrefix: cfg.AuthPrefix, Redirects: redirects}
	dv, err := newDPoPVerifier(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: dpop: %w", ErrConfig, err)
	}
	p.dpop, p.dpopAlgs = dv, algsList(dv)
	if cfg.TracerProvider != nil {
		p.tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	for _, e := range cfg.ExcludedPaths {
		p.excluded[e] = struct{}{}
	}
	// One judgement of cross-origin requests for every cookie the plugin
	// reads (token cookie, session, login routes), trusting the origin of
	// RedirectURI.
	p.cop = http.NewCrossOriginProtection()
	if u, err := url.Parse(cfg.RedirectURI); err == nil && u.Host != "" {
		_ = p.cop.AddTrustedOrigin(u.Scheme + "://" + u.Host)
		// The apps of one sign-in named by exact host trust each other's
		// unsafe requests; hosts matched by a pattern only get redirects.
		for _, o := range redirects.Origins(u.Scheme == "https") {
			_ = p.cop.AddTrustedOrigin(o)
		}
	}
	if cfg.Session != nil {
		u, _ := url.Parse(cfg.RedirectURI) // validated
		sm, err := newSessions(p, *cfg.Session, u.Scheme == "https")
		if err != nil {
			return nil, err
		}
		p.sessions = sm
		p.site.CookieDomain = sm.Domain()
	}
	newKeys := func(iss string, keycloak bool, ttl, interval time.Duration) *keySet {
		k := &keySet{
			client:   cfg.HTTPClient,
			issuer:   iss,
			keycloak: keycloak,
			timeout:  cfg.HTTPTimeout,
			ttl:      ttl,
			interval: interval,
			wait:     cfg.UnknownKIDWait,
			log:      cfg.Logger,
			tracer:   p.tracer,

			firstDone: make(chan struct{}),
		}
		k.onChange = func() { p.cache.reset(p.gen.Add(1)) }
		return k
	}
	p.keys = newKeys(iss, cfg.IssuerURL == "", cfg.JWKSCacheTTL, cfg.UnknownKIDRefreshInterval)
	primary, err := newIssuer(cfg.IssuerName, iss, append([]string{cfg.Audience}, cfg.OptionalAudiences...),
		cfg.Algorithms, c.mappings[0], p.keys)
	if err != nil {
		return nil, err
	}
	p.primary = primary
	p.issuers = []*issuer{primary}
	for i, t := range cfg.Issuers {
		keys := newKeys(t.Issuer(), t.IssuerURL == "", t.JWKSCacheTTL, t.UnknownKIDRefreshInterval)
		keys.log = cfg.Logger.With("issuer", t.Name)
		is, err := newIssuer(t.Name, t.Issuer(), t.Audiences, t.Algorithms, c.mappings[1+i], keys)
		if err != nil {
			return nil, err
		}
		p.issuers = append(p.issuers, is)
	}
	if len(p.issuers) > 1 {
		p.byURL = make(map[string]*issuer, len(p.issuers))
		for _, is := range p.issuers {
			p.byURL[is.url] = is
		}
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.stop = cancel
	var wg sync.WaitGroup
	for _, is := range p.issuers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			is.keys.run(runCtx)
		}()
	}
	go func() {
		defer close(p.stopped)
		stopWith := context.AfterFunc(ctx, cancel)
		defer stopWith()
		wg.Wait()
	}()
	return p, nil
}

// defaultHTTPClient is used for provider calls when Config.HTTPClient is
// nil: its own transport (not http.DefaultTransport, which other code may
// change), bounded dial and TLS handshake, no redirects to other hosts
// beyond the standard 10.
//
// Idle connections are dropped after providerIdleTimeout, before the
// provider (or a proxy in front of it) closes them: Node.js servers and
// Apache close idle keep-alive connections after 5 s, and a request sent
// on a connection the server is closing at that moment fails with
// "connection reset by peer". Go's transport retries that for GET (key
// sets, discovery) but not for the token endpoint's POST (code exchange,
// refresh): a sign-in would fail with 502. Calls to the provider are
// rare, so a new connection now and then costs nothing that matters.
func defaultHTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
			MaxIdleConns:          4,
			IdleConnTimeout:       providerIdleTimeout,
			ForceAttemptHTTP2:     true,
		},
	}
}

// providerIdleTimeout: see defaultHTTPClient.
const providerIdleTimeout = 4 * time.Second

// Issuer returns the issuer URL that tokens must carry (Config.Issuer).
func (p *Plugin) Issuer() string { return p.issuer }

// Config returns the effective configuration, defaults applied.
func (p *Plugin) Config() Config { return p.cfg }

// Ready reports whether the provider's keys have been loaded, that is
// whether tokens can be verified: the keys of every trusted issuer
// (Config.Issuers too).
func (p *Plugin) Ready() bool {
	for _, is := range p.issuers {
		if is.keys.current() == nil {
			return false
		}
	}
	return true
}

// WaitReady blocks until the keys are loaded or ctx is done.
func (p *Plugin) WaitReady(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for !p.Ready() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
		case <-p.stopped:
			return fmt.Errorf("%w: plugin closed", ErrUnavailable)
		case <-t.C:
		}
	}
	return nil
}

// Refresh fetches the key set now (joining a fetch under way). The
// background refresh makes calling it unnecessary; it exists for operators
// and tests.
// Every trusted issuer's keys are fetched.
func (p *Plugin) Refresh(ctx context.Context) error {
	var errs []error
	for _, is := range p.issuers {
		if err := is.keys.refresh(ctx); err != nil {
			errs = append(errs, fmt.Errorf("issuer %s: %w", is.name, err))
		}
	}
	return errors.Join(errs...)
}

// Stats reports the state of the key cache and of the verified-token cache.
func (p *Plugin) Stats() Stats {
	s := Stats{Keys: p.keys.stats(), CachedTokens: p.cache.len(), UnknownIssuers: p.unknownIssuers.Load()}
	s.Issuers = make([]IssuerStats, len(p.issuers))
	for i, is := range p.issuers {
		s.Issuers[i] = IssuerStats{Name: is.name, Issuer: is.url, Keys: is.keys.stats()}
	}
	return s
}

// Stats is a snapshot of the plugin's counters.
type Stats struct {
	// Keys are the primary issuer's keys (Issuers[0].Keys).
	Keys         KeyStats
	CachedTokens int
	// Issuers are the keys of every trusted issuer, the primary first.
	Issuers []IssuerStats
	// UnknownIssuers counts the tokens refused because their iss names
	// no trusted issuer (no key was fetched for them).
	UnknownIssuers uint64
}

// Close stops background refreshes. Verification keeps working with the
// keys already loaded. Sign-outs still waiting for the session store to
// delete their sessions are tried once more (for up to 2 s), and those it
// cannot delete are logged as lost.
func (p *Plugin) Close() error {
	p.stopOnce.Do(func() {
		for _, is := range p.issuers {
			is.keys.close()
		}
		p.stop()
		<-p.stopped
		if p.sessions != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			p.sessions.ClosePending(ctx)
			cancel()
		}
	})
	return nil
}
