package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/idp-proxy/idp-proxy/internal/buildinfo"
	"github.com/idp-proxy/idp-proxy/internal/server"
	"github.com/idp-proxy/idp-proxy/pkg/proxy"
)

func newServeCmd(d deps, g *globalFlags, load loadFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Run the proxy",
		Long: `serve runs the proxy on listen (HTTPS when tls.cert_file and tls.key_file
are set) and the operations endpoints /healthz, /readyz and /metrics on
metrics_listen. It starts even when the identity provider is down: protected
routes answer 503 until its keys are loaded. SIGTERM or SIGINT start a
graceful shutdown (server.shutdown_timeout).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load(cmd, g.config)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return serve(ctx, cfg, cmd.ErrOrStderr(), d.ready, d.tuneGC)
		},
	}
}

// serve runs the proxy until ctx is done. Logs go to logOut.
func serve(ctx context.Context, cfg proxy.Config, logOut io.Writer, ready func(proxyAddr, opsAddr string), gc func(*slog.Logger)) error {
	log, err := newLogger(cfg.Log, logOut)
	if err != nil {
		return err
	}
	if gc != nil {
		gc(log)
	}
	p, err := proxy.New(ctx, cfg, proxy.Options{Logger: log, AccessLog: log})
	if err != nil {
		return err
	}
	defer p.Close()
	log.Info("starting idp-proxy", "version", buildinfo.String(), "upstream", cfg.Upstream.URL,
		"issuer", p.Plugin().Issuer())

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("idp-proxy: listen: %w", err)
	}
	tls := cfg.TLS.CertFile != ""
	listeners := []server.Listener{{Name: "proxy", Listener: ln, Handler: p, TLS: tls}}
	opsAddr := ""
	if cfg.MetricsListen != "" {
		mln, err := lc.Listen(ctx, "tcp", cfg.MetricsListen)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("idp-proxy: listen for metrics: %w", err)
		}
		opsAddr = mln.Addr().String()
		listeners = append(listeners, server.Listener{Name: "ops", Listener: mln, Handler: p.OpsHandler()})
	}
	if ready != nil {
		ready(ln.Addr().String(), opsAddr)
	}
	s := cfg.Server
	err = server.Run(ctx, server.Options{
		ReadHeaderTimeout: s.ReadHeaderTimeout,
		ReadTimeout:       s.ReadTimeout,
		WriteTimeout:      s.WriteTimeout,
		IdleTimeout:       s.IdleTimeout,
		MaxHeaderBytes:    s.MaxHeaderBytes,
		ShutdownTimeout:   s.ShutdownTimeout,
		TLSCertFile:       cfg.TLS.CertFile,
		TLSKeyFile:        cfg.TLS.KeyFile,
		Logger:            log,
	}, listeners...)
	if err != nil {
		log.Error("server stopped with an error", "error", err)
		return err
	}
	log.Info("stopped")
	return nil
}
