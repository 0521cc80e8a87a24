// Package benchproxy is the reverse proxy the benchmark's baselines share
// (bench/bareproxy, bench/naiveproxy): a bare httputil.ReverseProxy from
// the standard library with a transport tuned for one busy upstream and a
// pool of copy buffers, and nothing else (no rules, no metrics, no logs).
package benchproxy

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

// bufferPool recycles the 32 KiB buffers ReverseProxy copies bodies with
// (without one, every request allocates a new buffer).
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

// Transport returns a transport tuned for one busy upstream: an idle
// connection kept per concurrent client, no proxy, no compression.
func Transport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024, // keep a connection per concurrent client
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // pass Accept-Encoding through untouched
	}
}

// New returns a reverse proxy to upstream with Transport and a buffer
// pool; it sets the X-Forwarded-* headers.
func New(upstream *url.URL) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.SetXForwarded()
		},
		Transport:  Transport(),
		BufferPool: &bufferPool{},
	}
}

// ListenAndServe serves h on addr with the server settings the baselines
// share.
func ListenAndServe(addr string, h http.Handler) error {
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 120 * time.Second}
	return srv.ListenAndServe()
}
