// Package server runs http.Servers with production timeouts and a graceful
// shutdown, for the project's binaries.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure Run. Zero values get the defaults in brackets.
type Options struct {
	ReadHeaderTimeout time.Duration // [5s]
	ReadTimeout       time.Duration // [30s]
	WriteTimeout      time.Duration // [60s]
	IdleTimeout       time.Duration // [120s]
	MaxHeaderBytes    int           // [32 KiB]
	ShutdownTimeout   time.Duration // [25s] time given to in-flight requests on shutdown
	TLSCertFile       string        // with TLSKeyFile, serve HTTPS
	TLSKeyFile        string
	TLSMinVersion     uint16 // [tls.VersionTLS12]
	// TLSConfig, when set, gives the TLS listeners their certificates
	// (GetCertificate: ACME) and protocols in place of the files;
	// TLSMinVersion still applies. [nil]
	TLSConfig *tls.Config
	// H2C accepts HTTP/2 without TLS (prior knowledge, as gRPC clients
	// send it) on plain listeners, besides HTTP/1.1. TLS listeners
	// always offer HTTP/2. [false]
	H2C bool
	// DrainDelay is how long the listeners keep accepting after the stop
	// signal (a stop with Drain set), while readiness already reports
	// not ready, so that load balancers stop sending new requests before
	// the listeners close. From the start of the drain every answer
	// carries "Connection: close": clients that keep connections alive
	// (and ignore readiness) open a new one for their next request, which
	// is refused once the listeners close, instead of sending it on a
	// connection that the shutdown closes under it (an ambiguous outcome
	// for a POST). [0]
	DrainDelay time.Duration
	// Drain, when not nil, is asked at stop time whether to drain (true
	// on SIGTERM, false on SIGINT), and is told so by OnDrain.
	Drain func() bool
	// OnDrain is called when draining starts, e.g. to fail readiness.
	OnDrain func()
	Logger  *slog.Logger // [discard]
}

// New returns an http.Server for h with the timeouts of o applied.
func New(h http.Handler, o Options) *http.Server {
	o = o.withDefaults()
	tc := &tls.Config{}
	if o.TLSConfig != nil {
		tc = o.TLSConfig.Clone()
	}
	tc.MinVersion = o.TLSMinVersion
	var protocols *http.Protocols
	if o.H2C {
		protocols = new(http.Protocols)
		protocols.SetHTTP1(true)
		protocols.SetHTTP2(true)
		protocols.SetUnencryptedHTTP2(true)
	}
	return &http.Server{
		Protocols:         protocols,
		TLSConfig:         tc,
		Handler:           h,
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    o.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(o.Logger.Handler(), slog.LevelWarn),
	}
}

func (o Options) withDefaults() Options {
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = 5 * time.Second
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 30 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 60 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 120 * time.Second
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = 32 << 10
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 25 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.TLSMinVersion == 0 {
		o.TLSMinVersion = tls.VersionTLS12
	}
	return o
}

// Listener pairs a bound listener with the handler it serves.
type Listener struct {
	Name     string // for logs, e.g. "proxy" or "metrics"
	Listener net.Listener
	Handler  http.Handler
	TLS      bool // serve with Options' certificate
}

// Run serves every listener until ctx is done, then shuts them all down
// gracefully, answering every request the kernel already accepted:
//
//  1. keep-alives end: idle connections are closed, and every answer from
//     now on says "Connection: close";
//  2. each listener stops taking new connections, hands over those the
//     kernel had already accepted (see drainListener: at most 500 ms), and
//     closes;
//  3. Run waits until each accepted connection has handed its request to
//     the handler (see connTracker), then http.Server.Shutdown waits for
//     the requests in flight.
//
// Steps 2 and 3 share Options.ShutdownTimeout. Run returns nil after a
// clean shutdown, or the first serve error.
func Run(ctx context.Context, o Options, ls ...Listener) error {
	o = o.withDefaults()
	servers := make([]*http.Server, len(ls))
	drains := make([]*drainListener, len(ls))
	errc := make(chan error, len(ls))
	tracker := newConnTracker()
	var draining, stopping atomic.Bool
	for i, l := range ls {
		h := l.Handler
		if h == nil {
			h = http.DefaultServeMux
		}
		if o.DrainDelay > 0 {
			h = closeWhenDraining(h, &draining)
		}
		srv := New(tracker.handler(h), o)
		srv.ConnState = func(c net.Conn, s http.ConnState) {
			markHijacked(c, s)
			tracker.connState(c, s)
		}
		srv.ConnContext = tracker.connContext
		servers[i] = srv
		dl := newDrainListener(l.Listener)
		drains[i] = dl
		var ln net.Listener = dl
		if !l.TLS {
			ln = problemListener{ln} // net/http's own error answers as problem+json
		}
		o.Logger.Info("listening", "server", l.Name, "addr", l.Listener.Addr().String(), "tls", l.TLS)
		go func() {
			var err error
			if l.TLS {
				err = srv.ServeTLS(dl, o.TLSCertFile, o.TLSKeyFile)
			} else {
				err = srv.Serve(ln)
			}
			if errors.Is(err, http.ErrServerClosed) || stopping.Load() && errors.Is(err, net.ErrClosed) {
				err = nil
			}
			if err != nil {
				err = fmt.Errorf("serve %s: %w", l.Name, err)
			}
			errc <- err
		}()
	}
	var first error
	running := len(ls)
	select {
	case <-ctx.Done():
		if o.DrainDelay > 0 && (o.Drain == nil || o.Drain()) {
			// Readiness fails first; the listeners keep accepting while
			// load balancers notice, then close.
			draining.Store(true)
			if o.OnDrain != nil {
				o.OnDrain()
			}
			o.Logger.Info("draining: not ready, still accepting", "delay", o.DrainDelay.String())
			t := time.NewTimer(o.DrainDelay)
			select {
			case <-t.C:
			case first = <-errc:
				running--
				t.Stop()
			}
		}
	case first = <-errc:
		running--
	}
	o.Logger.Info("shutting down", "timeout", o.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.ShutdownTimeout)
	defer cancel()
	stopping.Store(true)
	for _, srv := range servers {
		srv.SetKeepAlivesEnabled(false)
	}
	var closing sync.WaitGroup // each waits handshakeGrace: at once
	for _, dl := range drains {
		closing.Go(func() { _ = dl.Close() })
	}
	closing.Wait()
	for ; running > 0; running-- {
		select {
		case err := <-errc:
			if first == nil {
				first = err
			}
		case <-sctx.Done():
			running = 0
		}
	}
	if err := tracker.wait(sctx); err != nil {
		o.Logger.Warn("shutdown: connections accepted without a request yet are closed", "error", err)
	}
	for _, srv := range servers {
		if err := srv.Shutdown(sctx); err != nil && first == nil {
			first = fmt.Errorf("shutdown: %w", err)
		}
	}
	return first
}

// closeWhenDraining answers with "Connection: close" once draining is set,
// so that net/http closes each connection after its current answer.
func closeWhenDraining(h http.Handler, draining *atomic.Bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if draining.Load() {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}
