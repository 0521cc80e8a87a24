package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"syscall"
)

// run parses args, runs the demo until SIGINT or SIGTERM and returns the
// exit code. Logs go to stderr, the banner to stdout.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("idp-demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	fs.StringVar(&o.ProviderAddr, "provider-addr", "127.0.0.1:8080", "address of the development identity provider")
	fs.StringVar(&o.ShortenerAddr, "shortener-addr", "127.0.0.1:8000", "address of the shortener (the upstream)")
	fs.StringVar(&o.ProxyAddr, "proxy-addr", "127.0.0.1:4180", "address of idp-proxy")
	fs.StringVar(&o.OpsAddr, "ops-addr", "127.0.0.1:9180", "address of idp-proxy's /healthz, /readyz and /metrics")
	fs.StringVar(&o.DataDir, "data-dir", defaultDataDir, `directory of the shortener's bbolt file, or "memory:"`)
	sessions := fs.Bool("sessions", true, "browser sessions: a browser is signed in and brought back (false: the API mode, where /auth/callback answers the token document)")
	verbose := fs.Bool("v", false, "log every request and component message to stderr")
	if err := fs.Parse(args); err != nil {
		return 2
	}
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
