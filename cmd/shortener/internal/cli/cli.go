// Package cli builds the shortener command: flags, environment, logging,
// store selection, metrics and the server's life cycle.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/idp-proxy/idp-proxy/internal/buildinfo"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// envPrefix prefixes the environment variables: --base-url is
// SHORTENER_BASE_URL.
const envPrefix = "SHORTENER"

// Main runs the command with os.Args and returns the exit code.
func Main() int {
	if err := NewRootCmd().ExecuteContext(context.Background()); err != nil {
		return 1
	}
	return 0
}

// Metrics listener settings. /metrics has its own loopback listener by
// default: behind idp-proxy's example rules every GET /{code} is public,
// and /metrics on the API port would be public with it.
const (
	defaultMetricsListen = "127.0.0.1:9091"
	metricsOnAPI         = "api"
)

// NewRootCmd returns the shortener command. Every call returns an
// independent command with its own viper instance.
func NewRootCmd() *cobra.Command {
	return newRootCmd(func(ctx context.Context, cfg config, stderr io.Writer) error {
		ctx, stop := context.WithCancel(ctx)
		defer stop()
		sigs := make(chan os.Signal, 2)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
		defer signal.Stop(sigs)
		var drain atomic.Bool
		go func() {
			select {
			case sig := <-sigs:
				drain.Store(sig == syscall.SIGTERM)
				stop()
			case <-ctx.Done():
			}
		}()
		return run(ctx, cfg, stderr, runHooks{drain: drain.Load})
	})
}

func newRootCmd(runFn func(context.Context, config, io.Writer) error) *cobra.Command {
	v := viper.New()
	cmd := &cobra.Command{
		Use:     "shortener",
		Version: buildinfo.String(),
		Short:   "URL shortener service (POST /shorten, GET /{code}, GET /health)",
		Long: `shortener serves a JSON API that issues short codes for URLs and redirects them.

Every flag can also be set with an environment variable: SHORTENER_ followed
by the flag name in upper case with "-" as "_" (--base-url: SHORTENER_BASE_URL).
Flags win over the environment. Any other SHORTENER_ variable is an error
(a misspelt one would otherwise be ignored).

Stores (--store):
  bolt:PATH or PATH          embedded bbolt file, created on first run (default)
  postgres://user@host/db    PostgreSQL (pgx DSN; pool_max_conns etc. honoured;
  host=... user=... dbname=...  or libpq's keyword form; a DSN that does not
                             parse is an error naming the parameter),
                             schema migrated at start; for more than one replica
  memory:                    in memory, lost on exit (tests and demos)

Identity (pick at most one):
  --idp-server-url ... --idp-realm ..., or --idp-issuer-url ...
                             verify bearer tokens in-process with pkg/idp,
                             of a Keycloak realm or of any OpenID Connect
                             issuer (--idp-claims-preset generic for the
                             roles claim of Entra ID, Auth0, Okta...):
                             POST /shorten needs a valid access token (and
                             one of the --idp-create-roles, if any); the
                             token's subject is stored as created_by.
                             The /links API needs any valid token.
                             Redirects, /health and the page stay public.
  --trust-identity-headers   behind idp-proxy: its X-Auth-Request-User is the
                             caller (created_by, owner of /links), its
                             X-Auth-Request-Roles the roles for --admin-roles.
  --trust-issuer URL         behind idp-proxy with credential: assertion: verify
                             its X-Auth-Request-Assertion (--assertion-header)
                             with pkg/idp against URL's discovery and JWKS
                             (the proxy's assertion.issuer_url), audience
                             --trust-audience; its sub is created_by, its
                             roles the roles for --admin-roles. Identity
                             headers alone are refused (401).
  Without any, /links answers 401: there is nobody to own links.

Faults and stopping:
  --store-timeout bounds each store call: a store that hangs (a frozen
  PostgreSQL) answers 503 "the link store is unavailable" with Retry-After
  after it, like a store that is down; once a call has timed out, one call
  at a time tries the store and the others answer 503 at once, until it
  answers. Links redirected within --cache-ttl + --cache-stale-if-error
  are still redirected from the cache while the store fails.
  A PostgreSQL that does not answer at start does not stop the start: it
  is connected (and migrated) in the background, and links answer 503
  until then. One that answers with a refusal no retry fixes (no such
  database or role, a wrong password, no privilege) stops the start, with
  PostgreSQL's reason.
  SIGTERM drains: /health answers 503 at once, the listener keeps accepting
  for --drain-delay while load balancers stop sending, every answer says
  "Connection: close", then in-flight requests get --shutdown-timeout.
  SIGINT stops without the drain (Ctrl-C).

The page (GET /) and the API are described at GET /openapi.json.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: false,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkEnv(os.Environ(), cmd.Flags()); err != nil {
				return err
			}
			cfg, err := loadConfig(v)
			if err != nil {
				return err
			}
			return runFn(cmd.Context(), cfg, cmd.ErrOrStderr())
		},
	}
	cmd.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	cmd.SetFlagErrorFunc(suggestFlag)
	f := cmd.Flags()
	f.String("listen", "127.0.0.1:8000", "address to serve the API on")
	f.String("store", "bolt:./data/shortener.db", "link store: bolt:PATH, PATH, postgres://..., or memory:")
	f.String("base-url", "", `prefix of short_url, e.g. https://sho.rt (default "http://" + the listen address)`)
	f.String("log-format", "auto", "log format: json, text, or auto (text on a terminal, json otherwise)")
	f.String("log-level", "info", "log level: debug, info, warn, error")
	f.Bool("access-log", true, "log every request (method, path, status, size, duration; never query strings or headers)")
	f.String("metrics-listen", defaultMetricsListen, `address of the Prometheus /metrics listener (keep it off the public port); "api" serves /metrics on --listen as well, "off" disables it`)
	f.Bool("trust-identity-headers", false, "record the identity header of requests as the link's creator; ONLY behind a proxy that sets it and strips client copies")
	f.String("identity-header", "X-Auth-Request-User", "header read when --trust-identity-headers is on")
	f.String("trust-issuer", "", "verify idp-proxy's identity assertions (credential: assertion) against this issuer URL (its assertion.issuer_url); identity headers alone are then refused")
	f.String("trust-audience", "", "the audience of the assertions for this shortener (the upstream's audience in idp-proxy; required with --trust-issuer)")
	f.String("assertion-header", "X-Auth-Request-Assertion", "header carrying the assertion, with --trust-issuer")
	f.Duration("shutdown-timeout", 25*time.Second, "time given to in-flight requests on SIGTERM/SIGINT")
	f.Duration("drain-delay", 5*time.Second, `on SIGTERM, how long /health answers 503 while the listener still accepts, before the shutdown; "0s" stops at once`)
	f.Duration("store-timeout", shortener.DefaultStoreTimeout, "bound of each link store call: past it the request answers 503 (the link store is unavailable) with Retry-After")
	f.Bool("cache", true, "keep found links in an in-process redirect cache; --cache=false turns it off")
	f.Int("cache-size", 100_000, "links kept in the redirect cache (about 200 bytes each plus the URL); 0, the former spelling of --cache=false, is deprecated")
	f.Duration("cache-ttl", shortener.DefaultCacheTTL, "how long a cached link is served without asking the store: every replica serves an edit or stops serving a deleted link within this bound")
	f.Duration("cache-stale-if-error", shortener.DefaultCacheStaleIfError, `how long past --cache-ttl a cached link is still redirected while the store fails (down, frozen): links served recently survive an outage; "0s" never serves them stale`)
	f.Bool("visit-stats", true, "keep per-visit statistics (GET /links/{code}/stats): time, referrer host, device class, browser family, country, bot flag; never the IP address, User-Agent, cookies or query string")
	f.Int("visit-retention-days", 30, "days raw visits (hourly statistics) are kept; daily statistics are kept as long as the link")
	f.String("geoip-file", "", "MaxMind-format country database (GeoLite2-Country.mmdb, ...) for the visits' countries; the address is looked up in memory and dropped")
	f.String("client-ip-header", "", `header holding the client's address for --geoip-file, its last entry (e.g. "X-Forwarded-For" behind idp-proxy); "" uses the peer address`)
	f.Bool("custom-codes", true, "let creators choose their short code (short_code: 3-64 of A-Z a-z 0-9 _ -)")
	f.Bool("page", true, "serve the web page (create links, list yours, QR codes) at GET /")
	f.String("login-url", shortener.DefaultLoginURL, "where the page sends visitors without identity (a path on this site)")
	f.String("logout-url", "", `where the page's "Sign out" link goes, a path on this site (behind idp-proxy: /auth/logout); "" shows no sign-out link`)
	f.String("username-header", "X-Auth-Request-Preferred-Username", `header of the name the page shows as "Signed in as", read when --trust-identity-headers is on (RFC 2047 encoded-words decoded); without it, the identity header's value`)
	f.StringSlice("admin-roles", nil, "roles whose holders may read and delete every link, comma-separated (realm roles in-process, --roles-header behind the proxy)")
	f.String("roles-header", "X-Auth-Request-Roles", "header of the caller's comma-separated roles, read when --trust-identity-headers is on")
	f.Duration("visit-flush-interval", time.Second, "how often visit counts kept in memory are written to the store; a crash loses at most this much")
	f.Bool("tracing", false, "export OpenTelemetry traces over OTLP, configured by the OTEL_* variables (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL http/protobuf or grpc, OTEL_TRACES_SAMPLER, OTEL_SERVICE_NAME)")
	f.StringSlice("trace-parent-from", nil, "callers (CIDR prefixes or addresses, comma-separated, e.g. idp-proxy's) whose traceparent is continued; from others it starts a new trace linked to theirs")
	f.String("idp-token-location", "header", `where in-process mode reads tokens: "header" (Authorization: Bearer) or "cookie" (for the page in a browser)`)
	f.String("idp-cookie-name", "access_token", "cookie read with --idp-token-location cookie")
	f.String("idp-server-url", "", "OpenID Connect provider base URL (e.g. https://sso.example.com); enables in-process token checks on POST /shorten")
	f.String("idp-realm", "", "realm of --idp-server-url (required with it)")
	f.String("idp-issuer-url", "", "issuer URL of any OpenID Connect provider (e.g. https://login.microsoftonline.com/TENANT/v2.0), found by discovery; instead of --idp-server-url and --idp-realm")
	f.String("idp-claims-preset", "", `where identity is read from tokens: "keycloak" (realm_access.roles, ...) or "generic" (roles, scope or scp, preferred_username; other providers) (default keycloak)`)
	f.String("idp-client-id", "", "client ID tokens must be issued for (required with --idp-server-url or --idp-issuer-url)")
	f.String("idp-audience", "", "accepted audience (default: --idp-client-id)")
	f.StringSlice("idp-optional-audiences", nil, `extra accepted audiences, comma-separated (e.g. "account" for service tokens)`)
	f.StringSlice("idp-create-roles", nil, "realm roles needed to create links, comma-separated, any one suffices (default: any valid token)")
	_ = v.BindPFlags(f)
	v.SetEnvPrefix(envPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	cmd.AddCommand(newVersionCmd())
	return cmd
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "shortener", buildinfo.String())
			return err
		},
	}
}
