// Command upstream is the benchmark's origin server: it answers every
// request with a small 200 body and counts the requests it serves, so that
// the harness can check that rejected requests never reach it
// (GET /__bench/hits returns the count and is not counted). Under /api/,
// so that proxies apply their protected rule to it, GET
// /api/__bench/identity answers with the identity headers it received
// (X-Auth-Request-User, X-Auth-Request-Roles), one per line, for the
// harness to check that they reach the upstream.
//
//	go run ./bench/upstream -listen 127.0.0.1:9000
package main

import (
	"flag"
	"log"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// body is what every request gets: small, like a JSON API answer.
const body = `{"status":"ok","service":"bench-upstream","items":[1,2,3]}` + "\n"

func main() {
	listen := flag.String("listen", "127.0.0.1:9000", "address to listen on")
	flag.Parse()
	var hits atomic.Int64
	bodyLen := strconv.Itoa(len(body))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/__bench/hits" {
			_, _ = w.Write([]byte(strconv.FormatInt(hits.Load(), 10)))
			return
		}
		hits.Add(1)
		if r.URL.Path == "/api/__bench/identity" {
			_, _ = w.Write([]byte("user=" + r.Header.Get("X-Auth-Request-User") + "\nroles=" + r.Header.Get("X-Auth-Request-Roles") + "\n"))
			return
		}
		hdr := w.Header()
		hdr["Content-Type"] = []string{"application/json"}
		hdr["Content-Length"] = []string{bodyLen}
		_, _ = w.Write([]byte(body))
	})
	srv := &http.Server{Addr: *listen, Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 120 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
