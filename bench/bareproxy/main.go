// Command bareproxy is the benchmark's baseline proxy: a bare
// httputil.ReverseProxy from the standard library with a transport tuned
// for one busy upstream and a pool of copy buffers, and nothing else (no
// authentication, no rules, no metrics, no logs); see bench/internal/benchproxy.
//
//	go run ./bench/bareproxy -listen 127.0.0.1:9001 -upstream http://127.0.0.1:9000
package main

import (
	"flag"
	"log"
	"net/url"

	"github.com/idp-proxy/idp-proxy/bench/internal/benchproxy"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9001", "address to listen on")
	upstream := flag.String("upstream", "http://127.0.0.1:9000", "upstream URL")
	flag.Parse()
	u, err := url.Parse(*upstream)
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(benchproxy.ListenAndServe(*listen, benchproxy.New(u)))
}
