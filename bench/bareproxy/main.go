// Command bareproxy is the benchmark's baseline proxy: a bare
// httputil.ReverseProxy from the standard library with a transport tuned
// for one busy upstream, and nothing else (no authentication, no rules).
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
	"time"
)

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
		ForceAttemptHTTP2:   false,
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.SetXForwarded()
		},
		Transport: tr,
	}
	srv := &http.Server{Addr: *listen, Handler: rp, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 120 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
