// Command bareproxy is the benchmark's baseline proxy: a bare
// httputil.ReverseProxy from the standard library with a transport tuned
// for one busy upstream and a pool of copy buffers, and nothing else (no
// authentication, no rules, no metrics, no logs).
//
//	go run ./bench/bareproxy -listen 127.0.0.1:9001 -upstream http://127.0.0.1:9000
package main

import (
	"flag"
	"log"
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

func main() {
	listen := flag.String("listen", "127.0.0.1:9001", "address to listen on")
	upstream := flag.String("upstream", "http://127.0.0.1:9000", "upstream URL")
	flag.Parse()
	u, err := url.Parse(*upstream)
	if err != nil {
		log.Fatal(err)
	}
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024, // keep a connection per concurrent client
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // pass Accept-Encoding through untouched
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.SetXForwarded()
		},
		Transport:  tr,
		BufferPool: &bufferPool{},
	}
	srv := &http.Server{Addr: *listen, Handler: rp, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 120 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
