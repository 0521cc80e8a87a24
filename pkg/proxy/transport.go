package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/problem"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// newReverseProxy returns the ReverseProxy that forwards p's requests on
// tr: Rewrite (never Director, see rewrite), upstream errors as
// problem+json, the proxy's cookies kept from the upstream.
func (p *Proxy) newReverseProxy(tr http.RoundTripper, rewrite func(*httputil.ProxyRequest)) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite:        rewrite,
		Transport:      timedTransport{rt: tr, ok: p.metrics.upstreamOK, fail: p.metrics.upstreamFail},
		ErrorHandler:   p.upstreamError,
		ModifyResponse: p.modifyResponse,
		BufferPool:     newBufferPool(),
		ErrorLog:       slog.NewLogLogger(p.log.Handler(), slog.LevelWarn),
	}
}

// newTransport returns the upstream transport of a sidecar: one upstream,
// many concurrent requests, loopback or a nearby host.
func newTransport(c UpstreamConfig) (*http.Transport, error) {
	tlsCfg, err := upstreamTLS(c)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{
		TLSClientConfig:        tlsCfg,
		Proxy:                  nil, // the upstream is next door: never an environment proxy
		DialContext:            (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           2 * c.MaxIdleConnsPerHost,
		MaxIdleConnsPerHost:    c.MaxIdleConnsPerHost,
		IdleConnTimeout:        c.IdleTimeout,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  1 * time.Second,
		ResponseHeaderTimeout:  c.Timeout,
		MaxResponseHeaderBytes: 1 << 20,
		// Pass the client's Accept-Encoding and the upstream's encoding
		// through untouched instead of decompressing.
		DisableCompression: true,
	}
	setProtocols(tr, c.Protocol)
	return tr, nil
}

// setProtocols restricts tr to the upstream's protocol; auto keeps
// ForceAttemptHTTP2's choice (HTTP/2 when a TLS upstream offers it).
func setProtocols(tr *http.Transport, protocol string) {
	var p http.Protocols
	switch protocol {
	case ProtocolHTTP1:
		p.SetHTTP1(true)
	case ProtocolH2:
		p.SetHTTP2(true)
	case ProtocolH2C:
		p.SetUnencryptedHTTP2(true)
	default:
		return
	}
	tr.Protocols = &p
	if protocol != ProtocolHTTP1 {
		// Long gRPC streams may carry nothing for minutes: pings find a
		// connection that died silently (a NAT or load balancer that
		// forgot it) instead of leaving its streams hanging.
		tr.HTTP2 = &http.HTTP2Config{SendPingTimeout: 30 * time.Second, PingTimeout: 15 * time.Second}
	}
}

// upstreamTLS is the TLS client configuration for an https upstream: the
// CA file's authorities (else the system's), the client certificate when
// set, TLS 1.2 at least.
func upstreamTLS(c UpstreamConfig) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fieldErrorf(fields("Upstream.CAFile"), "%s: %w", named("Upstream.CAFile"), err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fieldErrorf(fields("Upstream.CAFile"), "%s %s holds no PEM certificate", named("Upstream.CAFile"), c.CAFile)
		}
		cfg.RootCAs = pool
	}
	if c.ClientCertFile != "" || c.ClientKeyFile != "" {
		cert, err := tls.LoadX509KeyPair(c.ClientCertFile, c.ClientKeyFile)
		if err != nil {
			return nil, fieldErrorf(fields("Upstream.ClientCertFile"), "%s/%s: %w", named("Upstream.ClientCertFile"), leaf("Upstream.ClientKeyFile"), err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// rewrite builds the upstream request. ReverseProxy has already removed
// the hop-by-hop headers (those named in Connection included) and the
// client's X-Forwarded-For/-Host/-Proto and Forwarded; nothing set here
// can be removed by the client.
func (p *Proxy) rewrite(pr *httputil.ProxyRequest, target *url.URL, h *headerRules) {
	pr.SetURL(target)
	out := pr.Out.Header
	if up := out["Upgrade"]; len(up) > 0 && !(len(up) == 1 && strings.EqualFold(up[0], "websocket")) {
		// Only WebSocket upgrades pass; others (h2c, TLS, ...) could
		// tunnel past the rules. The request goes on as plain HTTP.
		delete(out, "Upgrade")
		delete(out, "Connection")
	}
	h.stripAll(out)
	in := pr.In.Header
	if h.trustForwarded {
		if v := in["X-Forwarded-For"]; len(v) > 0 {
			out["X-Forwarded-For"] = v
		}
	}
	pr.SetXForwarded()
	if h.trustForwarded {
		for _, k := range [...]string{"X-Forwarded-Host", "X-Forwarded-Proto", "Forwarded"} {
			if v := in[k]; len(v) > 0 {
				out[k] = v
			}
		}
	}
	out["X-Request-Id"] = in["X-Request-Id"]
	if len(p.credentialCookies) > 0 {
		stripCookies(out, p.credentialCookies) // never forwarded
	}
	if id, ok := idp.IdentityFrom(pr.In.Context()); ok {
		h.setIdentity(out, id, bearerValue(in, id.Raw))
		h.forwardProof(out, in, id)
		if h.cred != nil {
			h.cred.apply(p, out, id)
		}
	}
	if h.cred != nil && h.cred.tokens != nil {
		setUpstreamToken(out, pr.In.Context()) // exchange, client_credentials
	}
	if p.tracer != nil {
		p.startUpstreamSpan(pr)
	}
}

// upstreamError answers failures to reach the upstream: 504 on timeout,
// 413 when the body exceeded the limit, 408 when the client's body did not
// arrive within the server's read timeout, 400 when it did not parse, 502
// otherwise.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	w, done := asGRPC(w, r)
	defer done()
	var mbe *http.MaxBytesError
	var ne net.Error
	status, detail := http.StatusBadGateway, "the upstream service is unavailable"
	var bodyErr *bodyError
	switch {
	case errors.As(err, &mbe):
		status, detail = http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body exceeds %d bytes", mbe.Limit)
	case errors.As(err, &bodyErr) && isTimeout(bodyErr.err), r.Context().Err() != nil && bodyTimedOut(r):
		// The client sent its body too slowly: the server's read timeout
		// ended it (and cancelled the request's context). Its fault, not
		// the upstream's; the answer is 408 and the connection closes.
		p.log.Warn("the client sent its request body too slowly", "request_id", r.Header.Get("X-Request-Id"),
			"method", r.Method, "path", r.URL.Path, "status", http.StatusRequestTimeout, "error", err)
		w.Header().Set("Connection", "close")
		p.plugin.WriteProblem(w, r, http.StatusRequestTimeout, "the request body did not arrive in time")
		return
	case errors.As(err, &bodyErr) && r.Context().Err() == nil:
		// The client's body did not parse (a bad chunk): its fault, not
		// the upstream's.
		p.log.Info("malformed request body", "request_id", r.Header.Get("X-Request-Id"), "error", bodyErr)
		w.Header().Set("Connection", "close")
		p.plugin.WriteProblem(w, r, http.StatusBadRequest, errMalformedBody.Error())
		return
	case errors.Is(r.Context().Err(), context.DeadlineExceeded):
		// A gRPC call's stream_timeout (grpcForward.serve) passed.
		status, detail = http.StatusGatewayTimeout, "the call reached the upstream's stream_timeout"
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
	p.plugin.WriteProblem(w, r, status, detail) // a page for a browser navigation
}

// modifyResponse keeps the proxy's X-Request-Id the only one in the
// response and drops the upstream's Set-Cookie lines for the proxy's own
// cookies.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	delete(resp.Header, "X-Request-Id")
	if removed := p.reserved.strip(resp.Header); removed != nil {
		p.log.Warn("the upstream tried to set the proxy's own cookies; removed",
			"request_id", resp.Request.Header.Get("X-Request-Id"), "cookies", removed)
	}
	return nil
}

// bufferPool lends ReverseProxy its 32 KiB copy buffers: a bounded free
// list on a channel, which (unlike a sync.Pool of *[]byte) costs no
// allocation to give a buffer back. Buffers beyond its capacity are left
// to the garbage collector.
type bufferPool struct{ free chan []byte }

// bufferPoolSize bounds the idle buffers kept: 256 × 32 KiB = 8 MiB.
const bufferPoolSize = 256

func newBufferPool() *bufferPool {
	return &bufferPool{free: make(chan []byte, bufferPoolSize)}
}

func (bp *bufferPool) Get() []byte {
	select {
	case b := <-bp.free:
		return b
	default:
		return make([]byte, 32<<10)
	}
}

func (bp *bufferPool) Put(b []byte) {
	if cap(b) < 32<<10 {
		return
	}
	select {
	case bp.free <- b[:32<<10]:
	default:
	}
}

// isTimeout reports whether err is a timeout (a read deadline that
// passed).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
