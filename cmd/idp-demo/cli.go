package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/idp-proxy/idp-proxy/internal/buildinfo"
)

// run parses args, runs the demo until SIGINT or SIGTERM (or, with the
// token command, prints a user's access token) and returns the exit code.
// Logs go to stderr, the banner to stdout. -h/--help prints the usage to
// stdout and exits 0; -v/--version prints the version, as idp-proxy and
// the shortener do.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "token" {
		return runToken(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("idp-demo", flag.ContinueOnError)
	var o Options
	fs.StringVar(&o.ProviderAddr, "provider-addr", "127.0.0.1:8080", "address of the development identity provider")
	fs.StringVar(&o.ShortenerAddr, "shortener-addr", "127.0.0.1:8000", "address of the shortener (the upstream)")
	fs.StringVar(&o.ProxyAddr, "proxy-addr", "127.0.0.1:4180", "address of idp-proxy")
	fs.StringVar(&o.OpsAddr, "ops-addr", "127.0.0.1:9180", "address of idp-proxy's /healthz, /readyz and /metrics")
	fs.StringVar(&o.DataDir, "data-dir", defaultDataDir, `directory of the shortener's bbolt file, or "memory:"`)
	shape := fs.String("shape", string(ShapeKeycloak), "the provider the development provider imitates, and the proxy is configured for: "+shapeList()+" (a plain issuer with Microsoft Entra ID's, Auth0's or the common claims)")
	sessions := fs.Bool("sessions", true, "browser sessions: a browser is signed in and brought back (false: the API mode, where /auth/callback answers the token document)")
	verbose := fs.Bool("verbose", false, "log every request and component message to stderr")
	version := fs.Bool("version", false, "print the version and exit")
	fs.BoolVar(version, "v", false, "print the version and exit (shorthand of --version)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: idp-demo [flags]        run the whole stack on loopback (Ctrl-C stops it)
       idp-demo token [alice]  print an access token of the demo user (the demo must be running)

Flags:
`)
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	if *version {
		fmt.Fprintln(stdout, "idp-demo", buildinfo.String())
		return 0
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "idp-demo: unexpected argument %q (commands: token; see idp-demo --help)\n", fs.Arg(0))
		return 2
	}
	sh, err := ParseShape(*shape)
	if err != nil {
		fmt.Fprintln(stderr, "idp-demo: --shape:", err)
		return 2
	}
	o.Shape = sh
	o.NoSessions = !*sessions
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	o.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	o.Out = stdout

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, o); err != nil {
		fmt.Fprintln(stderr, "idp-demo:", err)
		return 1
	}
	fmt.Fprintln(stdout, "\nidp-demo: stopped cleanly")
	return 0
}

// parseFlags parses args into fs. done reports that the program ends
// with code: 0 after -h/--help (the usage on stdout), 2 after a bad flag
// (the error and the usage on stderr).
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, done bool) {
	var msg bytes.Buffer
	fs.SetOutput(&msg)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		return 0, true
	case err != nil:
		_, _ = stderr.Write(msg.Bytes())
		return 2, true
	}
	fs.SetOutput(stderr)
	return 0, false
}

// runToken is `idp-demo token [user]`: the access token of the demo user
// from the running demo's provider, on one line, for
// TOKEN=$(bin/idp-demo token alice).
func runToken(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("idp-demo token", flag.ContinueOnError)
	providerAddr := fs.String("provider-addr", "127.0.0.1:8080", "address of the running demo's identity provider")
	proxyAddr := fs.String("proxy-addr", "127.0.0.1:4180", "address of the running demo's idp-proxy (its /auth/callback is the registered redirect URI)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: idp-demo token [flags] [alice]

Prints an access token of the demo user (alice, realm role creator) from
the running demo's identity provider: the authorization-code flow with
PKCE of the web client, without a browser.

Flags:
`)
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	user := DemoUser
	switch fs.NArg() {
	case 0:
	case 1:
		user = fs.Arg(0)
	default:
		fmt.Fprintln(stderr, "idp-demo token: at most one argument, the user")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	tok, err := UserToken(ctx, "http://"+*providerAddr, "http://"+*proxyAddr+"/auth/callback", user)
	if err != nil {
		fmt.Fprintln(stderr, "idp-demo token:", err)
		return 1
	}
	fmt.Fprintln(stdout, tok)
	return 0
}
