//go:build unix

package proxy

import (
	"net"
	"net/http/httputil"
	"net/url"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"

	"github.com/idp-proxy/idp-proxy/internal/grpctest"
	"github.com/idp-proxy/idp-proxy/internal/server"
)

// BenchmarkGRPCUnary compares a unary gRPC call (a real grpc-go client and
// server, in this process, h2c on loopback) through idp-proxy (valid
// RS256 token, cached; a rule; identity metadata) with the same call
// through a bare h2c httputil.ReverseProxy (flushing at once, pooled
// copy buffers, the same transport settings), and straight to the server,
// in the same run. Report the ratios of ns/op (calls/s is 1e9/ns).
func BenchmarkGRPCUnary(b *testing.B) {
	idpSrv := newProvider(b)
	up := grpctest.Start(b, grpctest.New(), nil)
	target, _ := url.Parse("http://" + up.Addr)

	cfg := testConfig(idpSrv, target.String())
	cfg.Upstream.Protocol = ProtocolH2C
	cfg.Routes = grpcRoutes
	_, proxyAddr := startProxyH2C(b, cfg)

	bareTr, _ := newTransport(UpstreamConfig{Protocol: ProtocolH2C, MaxIdleConnsPerHost: 64})
	bare := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
		},
		Transport:     bareTr,
		FlushInterval: -1,
		BufferPool:    newBufferPool(), // as idp-proxy's

	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	bareSrv := server.New(bare, server.Options{H2C: true})
	go func() { _ = bareSrv.Serve(ln) }()
	b.Cleanup(func() { _ = bareSrv.Close() })

	ctx := metadata.AppendToOutgoingContext(b.Context(), "authorization",
		"Bearer "+idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator")))
	for _, bc := range []struct{ name, addr string }{
		{"direct", up.Addr},
		{"bare-h2c-reverseproxy", ln.Addr().String()},
		{"idp-proxy", proxyAddr},
	} {
		conn, err := grpc.NewClient(bc.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = conn.Close() })
		client := testpb.NewTestServiceClient(conn)
		req := &testpb.SimpleRequest{ResponseSize: 64, Payload: &testpb.Payload{Body: make([]byte, 64)}}
		if _, err := client.UnaryCall(ctx, req); err != nil { // connect, fill the token cache
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			for b.Loop() {
				if _, err := client.UnaryCall(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			// The process's CPU time (user + system, every goroutine: client,
			// proxy and server) per call: less moved by the machine's other
			// load than ns/op.
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
		})
		b.Run(bc.name+"-parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := client.UnaryCall(ctx, req); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
