// Command const302 is the shortener benchmark's baseline: it answers every
// request with the same 302 as a shortener redirect (Location and
// Cache-Control), served by internal/server with the same options as
// cmd/shortener, so that the difference is the shortener's own work.
//
//	go run ./bench/const302 -listen 127.0.0.1:9002
package main

import (
	"context"
	"flag"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/idp-proxy/idp-proxy/internal/server"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9002", "address to listen on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hdr := w.Header()
		hdr["Location"] = []string{"https://example.com/articles/123456?utm_source=bench"}
		hdr["Cache-Control"] = []string{"private, max-age=0"}
		w.WriteHeader(http.StatusFound)
	})
	if err := server.Run(ctx, server.Options{}, server.Listener{Name: "api", Listener: ln, Handler: h}); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}
