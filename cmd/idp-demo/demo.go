// The demo runs the whole stack on loopback in one process: a development
// identity provider with Keycloak's paths (pkg/idp/idptest; with --shape,
// a plain issuer with another provider's claims, see shape.go), the shortener
// on its embedded bbolt store, and idp-proxy in front of it. It is what
// `make demo` starts; nothing in it is meant for production.

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/server"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/dpop"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
	"github.com/idp-proxy/idp-proxy/pkg/proxy"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/boltstore"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/idpauth"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/memstore"
)

// Demo clients and users of the development provider. The secrets are
// public on purpose: the provider is for local demos only.
const (
	Realm                = "demo"
	WebClientID          = "shortener"
	WebClientSecret      = "shortener-secret"
	ServiceClientID      = "svc-reporter"
	ServiceClientSecret  = "svc-reporter-secret"
	CreatorRole          = "creator"
	identityHeader       = "X-Auth-Request-User"
	usernameHeader       = "X-Auth-Request-Preferred-Username"
	signedOutPath        = "/signed-out"
	defaultDataDir       = "data/demo"
	startupTimeout       = 10 * time.Second
	demoShutdownDeadline = 5 * time.Second
)

// Options configure Run. Zero values get the defaults in brackets.
type Options struct {
	ProviderAddr  string // development identity provider ["127.0.0.1:8080"]
	ShortenerAddr string // the shortener (the upstream) ["127.0.0.1:8000"]
	ProxyAddr     string // idp-proxy ["127.0.0.1:4180"]
	OpsAddr       string // idp-proxy's /healthz, /readyz, /metrics ["127.0.0.1:9180"]
	// DataDir holds the shortener's bbolt file; "memory:" keeps links in
	// memory only. ["data/demo"]
	DataDir string
	// Shape is the provider the development provider imitates: a Keycloak
	// realm, or a plain issuer with Entra ID's, Auth0's or the generic
	// claims, the proxy configured for it (issuer URL, claim mapping).
	// [ShapeKeycloak]
	Shape Shape
	// NoSessions runs the proxy without browser sessions (the API mode:
	// the login callback answers the JSON token document, and a browser
	// gets 401 instead of the sign-in redirect). [false: sessions on]
	NoSessions bool
	// Logger receives the components' logs. [discard]
	Logger *slog.Logger
	// Out receives the banner with the URLs and curl commands. [discard]
	Out io.Writer
	// Ready, when set, is called with the bound addresses once everything
	// serves.
	Ready func(Endpoints)

	// seenByShortener, when set, is called with every request the
	// shortener receives, before it handles it (tests: what reaches the
	// upstream).
	seenByShortener func(*http.Request)
}

// Endpoints are the base URLs of the running demo.
type Endpoints struct {
	Provider  string // e.g. http://127.0.0.1:8080 (issuer: + "/realms/demo")
	Issuer    string // the provider's issuer: Provider + "/realms/demo", or Provider with a plain issuer
	Shortener string
	Proxy     string
	Ops       string
	// AssertionIssuer is the proxy as the issuer of the assertions it
	// signs for the shortener: Proxy + "/.idp-proxy".
	AssertionIssuer string
	TokenURL        string // the provider's token endpoint
	Store           string // where links are kept
}

func (o *Options) defaults() {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&o.ProviderAddr, "127.0.0.1:8080")
	def(&o.ShortenerAddr, "127.0.0.1:8000")
	def(&o.ProxyAddr, "127.0.0.1:4180")
	def(&o.OpsAddr, "127.0.0.1:9180")
	def(&o.DataDir, defaultDataDir)
	if o.Shape == "" {
		o.Shape = ShapeKeycloak
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
}

// Run starts the stack and serves until ctx is done, then stops every part
// cleanly (in-flight requests finish, the store closes).
func Run(ctx context.Context, o Options) (err error) {
	o.defaults()
	log := o.Logger

	// Bind the shortener and the proxy first: a port in use is the most
	// likely failure, and it should name the flag that fixes it.
	var lc net.ListenConfig
	shortLn, err := lc.Listen(ctx, "tcp", o.ShortenerAddr)
	if err != nil {
		return fmt.Errorf("demo: shortener address (--shortener-addr): %w", err)
	}
	defer shortLn.Close()
	proxyLn, err := lc.Listen(ctx, "tcp", o.ProxyAddr)
	if err != nil {
		return fmt.Errorf("demo: proxy address (--proxy-addr): %w", err)
	}
	defer proxyLn.Close()
	opsLn, err := lc.Listen(ctx, "tcp", o.OpsAddr)
	if err != nil {
		return fmt.Errorf("demo: operations address (--ops-addr): %w", err)
	}
	defer opsLn.Close()
	proxyURL := "http://" + proxyLn.Addr().String()

	provider, err := idptest.Start(idptest.Options{
		Addr:        o.ProviderAddr,
		Realm:       Realm,
		PlainIssuer: o.Shape.plain(),
		TTL:         15 * time.Minute,
		User: idptest.User{
			Username:    "alice",
			RealmRoles:  []string{CreatorRole},
			ClientRoles: map[string][]string{WebClientID: {"editor"}},
		},
		Clients: []idptest.Client{
			{ID: WebClientID, Secret: WebClientSecret, RedirectURIs: []string{proxyURL + "/auth/callback", proxyURL + signedOutPath}},
			{ID: ServiceClientID, Secret: ServiceClientSecret, RealmRoles: []string{CreatorRole}, ServiceAccount: true},
		},
	})
	if err != nil {
		return fmt.Errorf("demo: identity provider address (--provider-addr): %w", err)
	}
	defer provider.Close()
	provider.SetClaimsHook(o.Shape.hook(provider.Issuer))

	store, storeDesc, err := openStore(o.DataDir)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := store.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("demo: closing the store: %w", cerr))
		}
	}()
	svc, err := shortener.New(store, shortener.Options{
		BaseURL:     proxyURL, // short links are followed through the proxy
		CustomCodes: true,     // as the shortener binary's default, and the README's examples
		VisitStats:  true,     // as the shortener binary's default: the page's visits dialog and GET /links/{code}/stats
		Logger:      log.With("component", "shortener"),
	})
	if err != nil {
		return err
	}
	defer func() {
		// The last visit counts, before the store closes.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if cerr := svc.Close(cctx); cerr != nil {
			err = errors.Join(err, fmt.Errorf("demo: writing the last visit counts: %w", cerr))
		}
	}()
	// The shortener trusts no identity header: it verifies the assertion
	// the proxy signs for it (cmd/shortener --trust-issuer).
	issuerURL := proxyURL + assertionPath
	keyDir, dropKeys, err := assertionKeyDir(o.DataDir)
	if err != nil {
		return err
	}
	defer dropKeys()
	verifier, err := newAssertionVerifier(ctx, issuerURL, log.With("component", "shortener"))
	if err != nil {
		return err
	}
	defer verifier.Close()
	hopts := idpauth.AssertionOptions(verifier, assertionHeader)
	hopts.Page = true // the web page at GET /, behind the sign-in
	if !o.NoSessions {
		hopts.LogoutURL = "/auth/logout" // the page's "Sign out"
	}
	shortH, err := shortener.NewHandler(svc, hopts)
	if err != nil {
		return err
	}
	var upstream http.Handler = shortH
	if seen := o.seenByShortener; seen != nil {
		upstream = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen(r)
			shortH.ServeHTTP(w, r)
		})
	}

	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return fmt.Errorf("demo: session secret: %w", err)
	}
	ic := idp.Config{
		ServerURL:         provider.URL,
		Realm:             Realm,
		ClientID:          WebClientID,
		ClientSecret:      WebClientSecret,
		IncludeRoutes:     true,
		RedirectURI:       proxyURL + "/auth/callback",
		SessionSecret:     []byte(hex.EncodeToString(secret)),
		OptionalAudiences: []string{ServiceClientID},
		Session:           sessionConfig(o.NoSessions, proxyURL),
		Logger:            log.With("component", "idp-proxy"),
	}
	// DPoP-bound tokens pass with their proofs, beside bearer tokens
	// (README, "Proof of possession").
	ic.DPoP.Mode = dpop.Allowed
	if o.Shape.plain() {
		// As the README's Providers section configures such a provider.
		ic.ServerURL, ic.Realm, ic.IssuerURL, ic.Claims = "", "", provider.Issuer, o.Shape.ClaimMapping()
	}
	plugin, err := idp.New(ctx, ic)
	if err != nil {
		return err
	}
	defer plugin.Close()
	cfg := proxy.DefaultConfig()
	cfg.Upstream.URL = "http://" + shortLn.Addr().String()
	cfg.Upstream.Credential, cfg.Upstream.Audience = proxy.CredentialAssertion, assertionAudience
	cfg.Assertion.IssuerURL, cfg.Assertion.KeyFile = issuerURL, filepath.Join(keyDir, assertionKeyFile)
	cfg.Headers.User = identityHeader
	cfg.Headers.PreferredUsername = usernameHeader
	cfg.Routes = Routes()
	px, err := proxy.New(plugin, cfg, proxy.Options{
		Logger:    log.With("component", "idp-proxy"),
		AccessLog: log.With("component", "idp-proxy", "log", "access"),
	})
	if err != nil {
		return err
	}
	readyCtx, cancel := context.WithTimeout(ctx, startupTimeout)
	err = plugin.WaitReady(readyCtx)
	cancel()
	if err != nil {
		return fmt.Errorf("demo: the proxy could not load the provider's keys: %w", err)
	}

	ep := Endpoints{
		Provider:        provider.URL,
		Issuer:          provider.Issuer,
		Shortener:       "http://" + shortLn.Addr().String(),
		Proxy:           proxyURL,
		Ops:             "http://" + opsLn.Addr().String(),
		AssertionIssuer: issuerURL,
		TokenURL:        provider.TokenURL(),
		Store:           storeDesc,
	}
	runCtx, stopServers := context.WithCancel(ctx)
	defer stopServers()
	served := make(chan error, 1)
	go func() {
		served <- server.Run(runCtx, server.Options{Logger: log, ShutdownTimeout: demoShutdownDeadline},
			server.Listener{Name: "shortener", Listener: shortLn, Handler: upstream},
			server.Listener{Name: "idp-proxy", Listener: proxyLn, Handler: px},
			server.Listener{Name: "idp-proxy-ops", Listener: opsLn, Handler: px.OpsHandler()},
		)
	}()
	// The shortener's verifier reads the proxy's discovery and JWKS, which
	// the proxy serves only from here on: ready once it has them.
	readyCtx, cancel = context.WithTimeout(ctx, startupTimeout)
	err = verifier.WaitReady(readyCtx)
	cancel()
	if err != nil {
		stopServers()
		return errors.Join(fmt.Errorf("demo: the shortener could not load the proxy's assertion keys from %s: %w", issuerURL, err), <-served)
	}
	printBanner(o.Out, ep, px.Table(), !o.NoSessions, o.Shape)
	if o.Ready != nil {
		o.Ready(ep)
	}
	return <-served
}

// assertionKeyDir is where the proxy keeps its assertion signing key: the
// data directory (kept across restarts, as a volume would be), or a
// temporary one with an in-memory store, removed by drop.
func assertionKeyDir(dataDir string) (dir string, drop func(), err error) {
	if dataDir != "memory:" {
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return "", nil, fmt.Errorf("demo: data directory (--data-dir): %w", err)
		}
		return dataDir, func() {}, nil
	}
	dir, err = os.MkdirTemp("", "idp-demo-keys-")
	if err != nil {
		return "", nil, fmt.Errorf("demo: a directory for the assertion key: %w", err)
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}

// Routes are the demo proxy's rules (examples/demo-proxy.yaml has the
// same): the shortener's page and its assets need a signed-in user (any
// valid token: a browser is sent to the sign-in), short links, the health
// check, the page where a sign-out ends and its stylesheet are public, creating a link (POST /shorten, or POST /links
// from the page) needs the realm role creator, and everything else (the
// rest of the /links API the page calls) any valid token.
func Routes() []proxy.RouteConfig {
	return []proxy.RouteConfig{
		{Match: "GET /health", Public: true},
		{Match: "GET " + signedOutPath, Public: true},
		{Match: "GET /assets/app.css", Public: true}, // the signed-out page's stylesheet
		{Match: "GET /{$}"},
		{Match: "GET /assets/"},
		{Match: "GET /{code}", Public: true},
		{Match: "POST /shorten", Roles: []string{CreatorRole}},
		{Match: "POST /links", Roles: []string{CreatorRole}},
	}
}

// sessionConfig is the demo's browser sessions: the cookie store (one
// process), and a sign-out that ends on the shortener's public
// /signed-out page, with a link to sign in again (a page that needed a
// session would sign alice in again at once: the development provider
// shows no form). nil with noSessions.
func sessionConfig(noSessions bool, proxyURL string) *idp.SessionConfig {
	if noSessions {
		return nil
	}
	return &idp.SessionConfig{PostLogoutRedirectURI: proxyURL + signedOutPath}
}

func openStore(dir string) (shortener.Store, string, error) {
	if dir == "memory:" {
		return memstore.New(), "memory (lost on exit)", nil
	}
	path := filepath.Join(dir, "shortener.db")
	st, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		return nil, "", fmt.Errorf("demo: store (--data-dir): %w", err)
	}
	return st, "bbolt " + path, nil
}

func printBanner(w io.Writer, ep Endpoints, table string, sessions bool, shape Shape) {
	like := "a Keycloak realm"
	if shape.plain() {
		like = "a plain issuer with " + string(shape) + "-shaped tokens; idp-proxy: issuer_url " + ep.Issuer + ", claims " + shape.claimsYAML()
	}
	fmt.Fprintf(w, `
idp-proxy demo: everything runs on loopback. Ctrl-C stops it.

  identity provider  %[1]s   (development only: signs alice in without a form)
                     (%[2]s)
  idp-proxy          %[3]s   (operations: %[4]s/healthz, /readyz, /metrics)
  shortener          %[5]s   (the upstream; links in %[6]s)
                     (it verifies the assertion idp-proxy signs for it,
                     issuer %[12]s: never the caller's token,
                     and identity headers alone are refused)

Rules of the proxy:
%[7]s
# 1. Get a service token (client_credentials):
TOKEN=$(curl -s -d grant_type=client_credentials -d client_id=%[8]s -d client_secret=%[9]s \
  %[10]s | sed -E 's/.*"access_token":"([^"]+)".*/\1/')

# 2. Shorten a URL through the proxy (needs the realm role %[11]q):
curl -s -X POST %[3]s/shorten -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' -d '{"url":"https://example.com/hello"}'

# 3. Follow the short link (a public route): replace CODE with short_code
curl -si %[3]s/CODE

# A user's token instead (alice, realm role %[11]q), from this running demo:
TOKEN=$(bin/idp-demo token alice)

# Without a token the proxy answers 401, and the shortener never sees the request:
curl -si -X POST %[3]s/shorten -H 'Content-Type: application/json' -d '{"url":"https://example.com/"}'
`, ep.Issuer, like, ep.Proxy, ep.Ops, ep.Shortener, ep.Store, table,
		ServiceClientID, ServiceClientSecret, ep.TokenURL, CreatorRole, ep.AssertionIssuer)
	if sessions {
		fmt.Fprintf(w, `
# Browser: open %[1]s/ : the proxy sends you through the provider's sign-in
# (the development provider signs alice in without a form) and back to the
# shortener's page, which says who is signed in; its "Sign out" (or
# %[1]s/auth/logout) signs you out and ends on %[1]s/signed-out.
`, ep.Proxy)
		return
	}
	fmt.Fprintf(w, `
# Browser login (authorization code + PKCE, no sessions): open %[1]s/auth/login
`, ep.Proxy)
}
