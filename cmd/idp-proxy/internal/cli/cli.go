// Package cli builds the idp-proxy command: configuration loading, logging
// and the serve, check-config, token, verify and version subcommands.
package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idp-proxy/idp-proxy/cmd/idp-proxy/internal/config"
	"github.com/idp-proxy/idp-proxy/internal/buildinfo"
	"github.com/idp-proxy/idp-proxy/pkg/proxy"
)

// deps are the process's outside world, replaced in tests.
type deps struct {
	environ []string
	stdin   io.Reader
	// ready, when not nil, gets the bound addresses once serve listens
	// (proxy, then operations; "" when disabled).
	ready func(proxyAddr, opsAddr string)
	// signals, when not nil, replaces the process's SIGINT, SIGTERM and
	// SIGHUP for serve (tests send them here).
	signals <-chan os.Signal
	// tuneGC, when not nil, sets the process's garbage-collector defaults
	// before serving (see gc.go); nil in tests, which share one process.
	tuneGC func(log *slog.Logger, cacheSize int)
}

// Main runs the command with os.Args and returns the exit code: 0, or 1
// on any error (invalid configuration, invalid token, failure to serve).
func Main() int {
	cmd := newRootCmd(deps{environ: os.Environ(), stdin: os.Stdin,
		tuneGC: func(l *slog.Logger, cacheSize int) { tuneGC(os.Getenv, cacheSize, l) }})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		return 1
	}
	return 0
}

// NewRootCmd returns an independent idp-proxy command reading the process
// environment.
func NewRootCmd() *cobra.Command {
	return newRootCmd(deps{environ: os.Environ(), stdin: os.Stdin})
}

// globalFlags are the flags every subcommand shares.
type globalFlags struct {
	config, listen, upstream, metricsListen string
}

func newRootCmd(d deps) *cobra.Command {
	var g globalFlags
	cmd := &cobra.Command{
		Use:     "idp-proxy",
		Version: buildinfo.String(),
		Short:   "Authenticating reverse proxy for OpenID Connect bearer tokens",
		Long: `idp-proxy validates bearer tokens issued by any OpenID Connect provider (an
issuer URL found by discovery, or a Keycloak realm; idp.issuers trusts several
issuers at once, each with its claim mapping), applies per-route rules
(public, any valid token, roles, client roles, scopes, groups, any claim,
e-mail domains) and forwards requests with identity headers to one upstream
or to many (upstreams, chosen by host and path). With idp.include_routes it
also signs browsers in and keeps their sessions.

Configuration: a YAML file (--config, or IDP_PROXY_CONFIG; see
config.example.yaml for every key and its default), environment variables
IDP_PROXY_<SECTION>_<KEY> (IDP_PROXY_IDP_CLIENT_SECRET, IDP_PROXY_UPSTREAM_URL)
and the flags below, which win over both.`,
		SilenceUsage: true,
	}
	cmd.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	pf := cmd.PersistentFlags()
	pf.StringVarP(&g.config, "config", "c", envValue(d.environ, config.EnvConfigFile), "YAML configuration file (env IDP_PROXY_CONFIG)")
	pf.StringVar(&g.listen, "listen", "", "address to serve the proxy on (config: listen)")
	pf.StringVar(&g.upstream, "upstream", "", "URL of the upstream service (config: upstream.url)")
	pf.StringVar(&g.metricsListen, "metrics-listen", "", `address of /healthz, /readyz, /metrics; "off" disables (config: metrics_listen)`)
	load := func(cmd *cobra.Command, path string) (config.File, error) {
		o := config.LoadOptions{Env: d.environ, Overrides: map[string]any{}}
		f := cmd.Flags()
		if f.Changed("listen") {
			o.Overrides["listen"] = g.listen
		}
		if f.Changed("upstream") {
			o.Overrides["upstream.url"] = g.upstream
		}
		if f.Changed("metrics-listen") {
			v := g.metricsListen
			if v == "off" {
				v = ""
			}
			o.Overrides["metrics_listen"] = v
		}
		return config.Load(path, o)
	}
	cmd.AddCommand(
		newServeCmd(d, &g, load),
		newCheckConfigCmd(&g, load),
		newTokenCmd(&g, load),
		newDPoPProofCmd(),
		newVerifyCmd(d, &g, load),
		newVersionCmd(),
	)
	return cmd
}

type loadFunc func(cmd *cobra.Command, path string) (config.File, error)

func envValue(environ []string, name string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "idp-proxy", buildinfo.String())
			return err
		},
	}
}

func newCheckConfigCmd(g *globalFlags, load loadFunc) *cobra.Command {
	var effective, noSecrets, online bool
	cmd := &cobra.Command{
		Use:   "check-config [FILE]",
		Short: "Validate the configuration and print the compiled rule table",
		Long: `check-config loads the configuration (FILE, or --config, plus the
environment and flags) exactly as serve does, validates every key, compiles
the rules (conflicting patterns are errors naming both rules) and prints the
rule table in the order requests are judged. It contacts neither the
identity provider nor the upstream, so it cannot know whether the provider
answers, names the configured issuer or accepts the client's credentials:
--online checks these too (every trusted issuer's discovery document,
fetched and its issuer compared byte for byte, and its keys; with
include_routes, the client's authentication at the token endpoint by the
exchange of a made-up code, which the provider refuses with invalid_grant
when the credentials are right). Exit status 1 when the configuration is
invalid or an online check fails. With --effective it prints instead the effective configuration as
JSON (every default applied, secrets redacted). --no-secrets checks a deploy
file whose secrets come from the environment or from files mounted at deploy
time: secret files are not read and missing secrets are not errors.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := g.config
			if len(args) == 1 {
				path = args[0]
			}
			cfg, err := load(cmd, path)
			if err != nil {
				return err
			}
			c, err := config.Compile(cfg, config.CompileOptions{NoSecrets: noSecrets})
			if err != nil {
				return err
			}
			for _, d := range c.Deprecated {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning: "+d)
			}
			out := cmd.OutOrStdout()
			if effective {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(cfg.Effective()); err != nil || !online {
					return err
				}
				return checkOnline(cmd.Context(), cmd.ErrOrStderr(), c.IDP, noSecrets)
			}
			name := path
			if name == "" {
				name = "(environment only)"
			}
			metrics := cfg.MetricsListen
			if metrics == "" {
				metrics = "off"
			}
			upstream := cfg.Upstream.URL
			if cfg.Upstream.URL != "" {
				upstream += protocolNote(cfg.Upstream.Protocol)
			}
			for _, u := range cfg.Upstreams {
				upstream += "\n          " + u.Match + " -> " + u.URL + protocolNote(u.Inherit(cfg.Upstream).Protocol)
			}
			listen := cfg.Listen + tlsSummary(cfg.TLS)
			if cfg.Server.H2C {
				listen += " (h2c too)"
			}
			issuer := c.IDP.Issuer()
			for _, t := range c.IDP.Issuers {
				// The trusted issuers, the primary (sign-in, sessions) named first.
				if issuer == c.IDP.Issuer() {
					issuer = c.IDP.WithDefaults().IssuerName + " " + issuer
				}
				issuer += "\n          " + t.Name + " " + t.Issuer()
			}
			_, err = fmt.Fprintf(out, "configuration OK: %s\n\nlisten:   %s\nmetrics:  %s\nupstream: %s\nissuer:   %s\n\n%s",
				name, listen, metrics, upstream, issuer, c.Proxy.Table())
			if err != nil {
				return err
			}
			if !online {
				_, err = fmt.Fprint(out, "\n"+offlineUnknowns)
				return err
			}
			_, _ = fmt.Fprintln(out)
			return checkOnline(cmd.Context(), out, c.IDP, noSecrets)
		},
	}
	cmd.Flags().BoolVar(&noSecrets, "no-secrets", false, "do not read secret files nor require secrets (they come at deploy time)")
	cmd.Flags().BoolVar(&online, "online", false, "also contact the identity providers: discovery, issuer match, keys, the client's credentials")
	cmd.Flags().BoolVar(&effective, "effective", false, "print the effective configuration as JSON (secrets redacted) instead of the rule table")
	return cmd
}

// newLogger builds the process logger on w from the log section.
func newLogger(c config.Log, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.Level)); err != nil {
		return nil, fmt.Errorf("idp-proxy: log.level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	if strings.EqualFold(c.Format, "text") {
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return slog.New(slog.NewJSONHandler(w, opts)), nil
}

// protocolNote names an upstream's protocol when it is not auto.
func protocolNote(protocol string) string {
	if protocol == "" || protocol == proxy.ProtocolAuto {
		return ""
	}
	return " (" + protocol + ")"
}
