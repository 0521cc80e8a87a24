package idp

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

// Plugin protects handlers with the provider's access tokens. Create it
// with New; it is safe for concurrent use.
type Plugin struct {
	cfg         Config
	issuer      string
	realmQuoted string
	methods     map[string]jwt.SigningMethod // the configured algorithms
	kf          keyfunc.Keyfunc              // key selection over keys (see selectKey)
	keys        *keySet
	cache       *tokenCache
	sessions    *sessionManager // nil without Config.Session
	intern      *token.Interner // claim strings shared between tokens (see token.DecodeClaims)
	mapping     *token.Mapping  // Config.Claims; nil for the Keycloak preset as is
	audiences   map[string]struct{}
	excluded    map[string]struct{}
	cop         *http.CrossOriginProtection // the cookies' CSRF check: see TokenFromRequest
	redirects   *redirectHosts              // Config.AllowedRedirectHosts; nil without
	tracer      trace.Tracer                // nil without Config.TracerProvider

	stop     context.CancelFunc
	stopped  chan struct{}
	stopOnce sync.Once

	routesOnce sync.Once
	routes     http.Handler // built by Routes
}

// New validates cfg and returns a Plugin. Key discovery starts in the
// background and New does not wait for it: while the provider cannot be
// reached, protected requests get 503 with Retry-After and Ready reports
// false; they recover without a restart when it comes back. Use WaitReady
// to block until the keys are loaded.
//
// Background work (key refreshes) stops when ctx is done or Close is
// called.
func New(ctx context.Context, cfg Config) (*Plugin, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = defaultHTTPClient(cfg.HTTPTimeout)
	}
	issuer := cfg.Issuer()
	mapping, _ := cfg.Claims.compile() // validated above
	p := &Plugin{
		mapping:     mapping,
		cfg:         cfg,
		issuer:      issuer,
		realmQuoted: quoteRealm(cfg.challengeRealm()),
		methods:     signingMethods(cfg.Algorithms),
		cache:       newTokenCache(cfg.VerifiedCacheSize),
		intern:      token.NewInterner(),
		audiences:   make(map[string]struct{}, 1+len(cfg.OptionalAudiences)),
		excluded:    make(map[string]struct{}, len(cfg.ExcludedPaths)),
		stopped:     make(chan struct{}),
	}
	p.redirects, _ = compileRedirectHosts(cfg.AllowedRedirectHosts) // validated above
	if cfg.TracerProvider != nil {
		p.tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	p.audiences[cfg.Audience] = struct{}{}
	for _, a := range cfg.OptionalAudiences {
		if a != "" {
			p.audiences[a] = struct{}{}
		}
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
		for _, o := range p.redirects.origins(u.Scheme == "https") {
			_ = p.cop.AddTrustedOrigin(o)
		}
	}
	if cfg.Session != nil {
		u, _ := url.Parse(cfg.RedirectURI) // validated
		sm, err := newSessionManager(p, *cfg.Session, u.Scheme == "https")
		if err != nil {
			return nil, err
		}
		p.sessions = sm
	}
	p.keys = &keySet{
		client:   cfg.HTTPClient,
		issuer:   issuer,
		keycloak: cfg.IssuerURL == "",
		timeout:  cfg.HTTPTimeout,
		ttl:      cfg.JWKSCacheTTL,
		interval: cfg.UnknownKIDRefreshInterval,
		log:      cfg.Logger,
		tracer:   p.tracer,
	}
	kf, err := newKeyfunc(p.keys)
	if err != nil {
		return nil, err
	}
	p.kf = kf
	p.keys.onChange = func() {
		if s := p.keys.current(); s != nil {
			p.cache.reset(s.gen)
		}
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.stop = cancel
	go func() {
		defer close(p.stopped)
		stopWith := context.AfterFunc(ctx, cancel)
		defer stopWith()
		p.keys.run(runCtx)
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
// whether tokens can be verified.
func (p *Plugin) Ready() bool { return p.keys.current() != nil }

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
func (p *Plugin) Refresh(ctx context.Context) error { return p.keys.refresh(ctx) }

// Stats reports the state of the key cache and of the verified-token cache.
func (p *Plugin) Stats() Stats {
	return Stats{Keys: p.keys.stats(), CachedTokens: p.cache.len()}
}

// Stats is a snapshot of the plugin's counters.
type Stats struct {
	Keys         KeyStats
	CachedTokens int
}

// Close stops background refreshes. Verification keeps working with the
// keys already loaded.
func (p *Plugin) Close() error {
	p.stopOnce.Do(func() {
		p.keys.close()
		p.stop()
		<-p.stopped
	})
	return nil
}
