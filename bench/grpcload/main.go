// Command grpcload is the gRPC side of bench/grpc_instr.sh: a gRPC
// upstream (grpc-go's interoperability TestService over h2c), a bare h2c
// reverse proxy (the baseline), and a load generator of unary calls.
//
//	grpcload upstream -listen 127.0.0.1:50051
//	grpcload bare -listen 127.0.0.1:8081 -upstream http://127.0.0.1:50051
//	grpcload load -addr 127.0.0.1:8081 -token T -c 4 -d 5s   # prints the calls made
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"

	"github.com/idp-proxy/idp-proxy/internal/grpctest"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: grpcload upstream|bare|load [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "upstream":
		err = upstream(os.Args[2:])
	case "bare":
		err = bare(os.Args[2:])
	case "load":
		err = load(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpcload:", err)
		os.Exit(1)
	}
}

func upstream(args []string) error {
	fs := flag.NewFlagSet("upstream", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:50051", "address")
	_ = fs.Parse(args)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	testpb.RegisterTestServiceServer(srv, grpctest.New())
	return srv.Serve(ln)
}

// bare is the baseline: httputil.ReverseProxy with an h2c transport, every
// message flushed at once, served with h2c.
func bare(args []string) error {
	fs := flag.NewFlagSet("bare", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:8081", "address")
	up := fs.String("upstream", "http://127.0.0.1:50051", "h2c upstream URL")
	_ = fs.Parse(args)
	target, err := url.Parse(*up)
	if err != nil {
		return err
	}
	var tp, sp http.Protocols
	tp.SetUnencryptedHTTP2(true)
	sp.SetHTTP1(true)
	sp.SetUnencryptedHTTP2(true)
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
		},
		Transport:     &http.Transport{Protocols: &tp, MaxIdleConnsPerHost: 64, DisableCompression: true},
		FlushInterval: -1,
	}
	srv := &http.Server{Addr: *listen, Handler: rp, Protocols: &sp, ReadHeaderTimeout: 5 * time.Second}
	return srv.ListenAndServe()
}

// load makes unary calls on c concurrent goroutines (one connection) for
// d, or until one answers when d is 0, and prints the number of calls.
func load(args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:4180", "address")
	token := fs.String("token", "", "bearer token")
	conc := fs.Int("c", 4, "concurrent calls")
	d := fs.Duration("d", 5*time.Second, "duration; 0: one call")
	_ = fs.Parse(args)
	conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := testpb.NewTestServiceClient(conn)
	ctx := context.Background()
	if *token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+*token)
	}
	req := &testpb.SimpleRequest{ResponseSize: 64, Payload: &testpb.Payload{Body: make([]byte, 64)}}
	if *d == 0 {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := client.UnaryCall(cctx, req)
		return err
	}
	var calls atomic.Int64
	var first error
	var once sync.Once
	end := time.Now().Add(*d)
	var wg sync.WaitGroup
	for range *conc {
		wg.Go(func() {
			for time.Now().Before(end) {
				if _, err := client.UnaryCall(ctx, req); err != nil {
					once.Do(func() { first = err })
					return
				}
				calls.Add(1)
			}
		})
	}
	wg.Wait()
	if first != nil {
		return errors.Join(errors.New("a call failed"), first)
	}
	fmt.Println(calls.Load())
	return nil
}
