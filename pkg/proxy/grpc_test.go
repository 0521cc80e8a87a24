package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/idp-proxy/idp-proxy/internal/grpctest"
	"github.com/idp-proxy/idp-proxy/internal/server"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// grpcRoutes protect the test service by gRPC method: EmptyCall needs the
// admin role, every other method of the service any valid token.
var grpcRoutes = []RouteConfig{
	{Match: "POST /grpc.testing.TestService/EmptyCall", Roles: []string{"admin"}},
	{Match: "/grpc.testing.TestService/"},
}

// grpcRig is a real gRPC server behind a Proxy served by internal/server
// (h2c on its plain listener, short read and write timeouts), or by an
// HTTPS httptest server.
type grpcRig struct {
	proxy    *Proxy
	idp      *idptest.Server
	svc      *grpctest.Service
	upstream *grpctest.Server
	conn     *grpc.ClientConn
	client   testpb.TestServiceClient
	token    string
}

// serverTimeout is the proxy's read and write timeout in these tests: a
// stream idle for a few of them outlives it.
const serverTimeout = 300 * time.Millisecond

// startGRPCRig starts the service (over TLS when upstreamTLS), the proxy
// (HTTPS when proxyTLS, else h2c) and a client.
func startGRPCRig(t *testing.T, upstreamTLS, proxyTLS bool) *grpcRig {
	t.Helper()
	g := &grpcRig{idp: newProvider(t), svc: grpctest.New()}
	var cfg testSetup
	if upstreamTLS {
		cert, caFile := selfSignedPair(t)
		g.upstream = grpctest.Start(t, g.svc, &tls.Config{Certificates: []tls.Certificate{cert}})
		cfg = testConfig(g.idp, "https://"+g.upstream.Addr)
		cfg.Upstream.Protocol = ProtocolH2
		cfg.Upstream.CAFile = caFile
	} else {
		g.upstream = grpctest.Start(t, g.svc, nil)
		cfg = testConfig(g.idp, "http://"+g.upstream.Addr)
		cfg.Upstream.Protocol = ProtocolH2C
	}
	cfg.Routes = grpcRoutes
	cfg.Upstream.Timeout = serverTimeout // response headers: not applied to streams
	p, err := newProxy(t, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := p.Plugin().WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	g.proxy = p
	var creds credentials.TransportCredentials
	var addr string
	if proxyTLS {
		srv := httptest.NewUnstartedServer(p)
		srv.EnableHTTP2 = true
		srv.Config.ReadTimeout, srv.Config.WriteTimeout = serverTimeout, serverTimeout
		srv.StartTLS()
		t.Cleanup(srv.Close)
		pool := x509.NewCertPool()
		pool.AddCert(srv.Certificate())
		creds = credentials.NewTLS(&tls.Config{RootCAs: pool})
		addr = srv.Listener.Addr().String()
	} else {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := server.New(p, server.Options{H2C: true, ReadTimeout: serverTimeout, WriteTimeout: serverTimeout})
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		creds = insecure.NewCredentials()
		addr = ln.Addr().String()
	}
	g.conn, err = grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.conn.Close() })
	g.client = testpb.NewTestServiceClient(g.conn)
	g.token = g.idp.Mint(g.idp.UserClaims("shortener", "alice", "creator"))
	return g
}

// ctx returns a context carrying the bearer token (when not "") and more
// metadata pairs, cancelled when the test ends.
func (g *grpcRig) ctx(t *testing.T, token string, kv ...string) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	if token != "" {
		kv = append(kv, "authorization", "Bearer "+token)
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

func TestGRPCThroughProxy(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		upstreamTLS, proxyTLS bool
	}{
		{"h2c to h2c", false, false},
		{"TLS to TLS", true, true},
		{"h2c to TLS upstream", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startGRPCRig(t, tc.upstreamTLS, tc.proxyTLS)
			t.Run("unary with metadata, trailers and identity", func(t *testing.T) {
				var hdr, trl metadata.MD
				resp, err := g.client.UnaryCall(g.ctx(t, g.token, "x-echo", "ping", "x-echo-bin", "\x00\x01\xff", "x-auth-request-user", "mallory"),
					&testpb.SimpleRequest{ResponseSize: 5, FillUsername: true}, grpc.Header(&hdr), grpc.Trailer(&trl))
				if err != nil {
					t.Fatal(err)
				}
				if resp.GetUsername() != "user-alice" || len(resp.GetPayload().GetBody()) != 5 {
					t.Errorf("username %q (the proxy's identity, never the client's), payload %d bytes", resp.GetUsername(), len(resp.GetPayload().GetBody()))
				}
				if got := hdr.Get("x-echo"); len(got) != 1 || got[0] != "ping" {
					t.Errorf("header metadata %v", hdr)
				}
				if got := hdr.Get("x-echo-bin"); len(got) != 1 || got[0] != "\x00\x01\xff" {
					t.Errorf("binary metadata %q", got)
				}
				if got := trl.Get("x-echo-trailer"); len(got) != 1 || got[0] != "ping" {
					t.Errorf("trailer metadata %v", trl)
				}
			})
			t.Run("readiness reaches the gRPC upstream", func(t *testing.T) {
				rec := httptest.NewRecorder()
				g.proxy.OpsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
				if rec.Code != 200 {
					t.Errorf("/readyz: %d %s", rec.Code, rec.Body)
				}
			})
			t.Run("upstream status and message pass unchanged", func(t *testing.T) {
				msg := "quota 100% used: ünïcode\nline"
				_, err := g.client.UnaryCall(g.ctx(t, g.token), &testpb.SimpleRequest{ResponseStatus: &testpb.EchoStatus{Code: int32(codes.ResourceExhausted), Message: msg}})
				if st := status.Convert(err); st.Code() != codes.ResourceExhausted || st.Message() != msg {
					t.Errorf("got %v %q", st.Code(), st.Message())
				}
			})
			t.Run("server stream", func(t *testing.T) {
				st, err := g.client.StreamingOutputCall(g.ctx(t, g.token, "x-echo", "s"), &testpb.StreamingOutputCallRequest{
					ResponseParameters: []*testpb.ResponseParameters{{Size: 1}, {Size: 2}, {Size: 3}},
					ResponseStatus:     &testpb.EchoStatus{Code: int32(codes.Aborted), Message: "done"},
				})
				if err != nil {
					t.Fatal(err)
				}
				for i := 1; i <= 3; i++ {
					m, err := st.Recv()
					if err != nil || len(m.GetPayload().GetBody()) != i {
						t.Fatalf("message %d: %v %v", i, m, err)
					}
				}
				_, err = st.Recv()
				if s := status.Convert(err); s.Code() != codes.Aborted || s.Message() != "done" {
					t.Errorf("end of stream: %v", err)
				}
				if got := st.Trailer().Get("x-echo-trailer"); len(got) != 1 || got[0] != "s" {
					t.Errorf("trailer %v", st.Trailer())
				}
			})
			t.Run("client stream", func(t *testing.T) {
				st, err := g.client.StreamingInputCall(g.ctx(t, g.token))
				if err != nil {
					t.Fatal(err)
				}
				for _, n := range []int{10, 20, 30} {
					if err := st.Send(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: make([]byte, n)}}); err != nil {
						t.Fatal(err)
					}
				}
				resp, err := st.CloseAndRecv()
				if err != nil || resp.GetAggregatedPayloadSize() != 60 {
					t.Fatalf("%v %v", resp, err)
				}
			})
			t.Run("bidirectional stream", func(t *testing.T) {
				st, err := g.client.FullDuplexCall(g.ctx(t, g.token))
				if err != nil {
					t.Fatal(err)
				}
				// Each answer arrives before the next request is sent: the
				// proxy flushes every message at once, both ways.
				for i := int32(1); i <= 3; i++ {
					if err := st.Send(&testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{Size: i}}}); err != nil {
						t.Fatal(err)
					}
					m, err := st.Recv()
					if err != nil || len(m.GetPayload().GetBody()) != int(i) {
						t.Fatalf("answer %d: %v %v", i, m, err)
					}
				}
				if err := st.CloseSend(); err != nil {
					t.Fatal(err)
				}
				if _, err := st.Recv(); !errors.Is(err, io.EOF) {
					t.Fatalf("end: %v", err)
				}
			})
			t.Run("client cancellation reaches the upstream", func(t *testing.T) {
				ctx, cancel := context.WithCancel(g.ctx(t, g.token))
				st, err := g.client.FullDuplexCall(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if err := st.Send(&testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{Size: 1}}}); err != nil {
					t.Fatal(err)
				}
				if _, err := st.Recv(); err != nil {
					t.Fatal(err)
				}
				cancel()
				select {
				case m := <-g.svc.Cancelled:
					if m != "FullDuplexCall" {
						t.Errorf("cancelled %s", m)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the upstream's call was never cancelled")
				}
			})
			t.Run("refusals are gRPC statuses", func(t *testing.T) {
				// grpc-go maps an HTTP 401 to Unauthenticated too, but with
				// "unexpected HTTP status code" as its message: the proxy's
				// own detail shows that the answer was a gRPC one.
				_, err := g.client.UnaryCall(g.ctx(t, ""), &testpb.SimpleRequest{})
				if st := status.Convert(err); st.Code() != codes.Unauthenticated || !strings.Contains(st.Message(), "token") || strings.Contains(st.Message(), "HTTP status") {
					t.Errorf("no token: %v", err)
				}
				_, err = g.client.UnaryCall(g.ctx(t, "not.a.token"), &testpb.SimpleRequest{})
				if st := status.Convert(err); st.Code() != codes.Unauthenticated {
					t.Errorf("invalid token: %v", err)
				}
				_, err = g.client.EmptyCall(g.ctx(t, g.token), &testpb.Empty{})
				if st := status.Convert(err); st.Code() != codes.PermissionDenied || !strings.Contains(st.Message(), "role") || strings.Contains(st.Message(), "HTTP status") {
					t.Errorf("without the admin role: %v", err)
				}
				admin := g.idp.Mint(g.idp.UserClaims("shortener", "root", "admin"))
				if _, err := g.client.EmptyCall(g.ctx(t, admin), &testpb.Empty{}); err != nil {
					t.Errorf("with the admin role: %v", err)
				}
				st, err := g.client.StreamingOutputCall(g.ctx(t, ""), &testpb.StreamingOutputCallRequest{})
				if err == nil {
					_, err = st.Recv()
				}
				if s := status.Convert(err); s.Code() != codes.Unauthenticated {
					t.Errorf("stream without a token: %v", err)
				}
			})
		})
	}
}

// TestGRPCIdleStreamOutlivesServerTimeouts holds streams idle for several
// times the proxy's read and write timeouts and the upstream's
// response-header timeout: stream_timeout bounds them instead.
func TestGRPCIdleStreamOutlivesServerTimeouts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		proxyTLS bool
	}{{"h2c", false}, {"TLS", true}} {
		t.Run(tc.name, func(t *testing.T) {
			g := startGRPCRig(t, false, tc.proxyTLS)
			idle := 3 * serverTimeout
			g.svc.BeforeSend = func(ctx context.Context, i int) error {
				// Silent before the first message (no headers yet), and
				// between the two.
				select {
				case <-time.After(idle):
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			st, err := g.client.StreamingOutputCall(g.ctx(t, g.token), &testpb.StreamingOutputCallRequest{
				ResponseParameters: []*testpb.ResponseParameters{{Size: 1}, {Size: 2}},
			})
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= 2; i++ {
				if m, err := st.Recv(); err != nil || len(m.GetPayload().GetBody()) != i {
					t.Fatalf("message %d after %s idle: %v", i, idle, err)
				}
			}
			if _, err := st.Recv(); !errors.Is(err, io.EOF) {
				t.Fatalf("end: %v", err)
			}
			// The client side idle as long, in a bidirectional stream.
			bs, err := g.client.FullDuplexCall(g.ctx(t, g.token))
			if err != nil {
				t.Fatal(err)
			}
			for i := int32(1); i <= 2; i++ {
				if i == 2 {
					time.Sleep(idle)
				}
				if err := bs.Send(&testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{Size: i}}}); err != nil {
					t.Fatal(err)
				}
				if m, err := bs.Recv(); err != nil || len(m.GetPayload().GetBody()) != int(i) {
					t.Fatalf("answer %d: %v", i, err)
				}
			}
			_ = bs.CloseSend()
			if _, err := bs.Recv(); !errors.Is(err, io.EOF) {
				t.Fatalf("end: %v", err)
			}
		})
	}
}

// TestGRPCStreamTimeoutEndsCalls: past the upstream's stream_timeout the
// call ends, as DEADLINE_EXCEEDED when nothing was answered yet.
func TestGRPCStreamTimeoutEndsCalls(t *testing.T) {
	idpSrv := newProvider(t)
	svc := grpctest.New()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	svc.BeforeSend = func(ctx context.Context, int int) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return ctx.Err()
	}
	up := grpctest.Start(t, svc, nil)
	cfg := testConfig(idpSrv, "http://"+up.Addr)
	cfg.Upstream.Protocol = ProtocolH2C
	cfg.Upstream.StreamTimeout = 200 * time.Millisecond
	_, srv := startProxyH2C(t, cfg)
	conn, err := grpc.NewClient(srv, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator")))
	st, err := testpb.NewTestServiceClient(conn).StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{Size: 1}}})
	if err == nil {
		_, err = st.Recv()
	}
	if s := status.Convert(err); s.Code() != codes.DeadlineExceeded {
		t.Fatalf("got %v", err)
	}
	select {
	case <-svc.Cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream's call was not cancelled at the stream timeout")
	}
}

// TestGRPCUpstreamDown: an upstream that is not there is UNAVAILABLE, and
// one that stops mid-stream ends the client's stream with an error.
func TestGRPCUpstreamDown(t *testing.T) {
	g := startGRPCRig(t, false, false)
	svcBlock := make(chan struct{})
	g.svc.BeforeSend = func(ctx context.Context, i int) error {
		if i == 1 {
			<-svcBlock
		}
		return nil
	}
	st, err := g.client.StreamingOutputCall(g.ctx(t, g.token), &testpb.StreamingOutputCallRequest{
		ResponseParameters: []*testpb.ResponseParameters{{Size: 1}, {Size: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	g.upstream.Stop() // resets the upstream stream
	close(svcBlock)
	if _, err := st.Recv(); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("after the upstream stopped: %v, want an error", err)
	}
	_, err = g.client.UnaryCall(g.ctx(t, g.token), &testpb.SimpleRequest{})
	if s := status.Convert(err); s.Code() != codes.Unavailable || !strings.Contains(s.Message(), "upstream") {
		t.Fatalf("upstream down: %v", err)
	}
}

// TestGRPCClientStreamNotBoundByBodyLimit: max_body_bytes bounds request
// bodies, not the total of a gRPC client stream (its server bounds each
// message).
func TestGRPCClientStreamNotBoundByBodyLimit(t *testing.T) {
	idpSrv := newProvider(t)
	up := grpctest.Start(t, grpctest.New(), nil)
	cfg := testConfig(idpSrv, "http://"+up.Addr)
	cfg.Upstream.Protocol = ProtocolH2C
	cfg.MaxBodyBytes = 1000
	_, addr := startProxyH2C(t, cfg)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator")))
	st, err := testpb.NewTestServiceClient(conn).StreamingInputCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := st.Send(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: make([]byte, 900)}}); err != nil {
			t.Fatal(err)
		}
	}
	if resp, err := st.CloseAndRecv(); err != nil || resp.GetAggregatedPayloadSize() != 4500 {
		t.Fatalf("%v %v", resp, err)
	}
}

// startProxyH2C serves a Proxy of cfg with internal/server, h2c on, and
// returns it with its address.
func startProxyH2C(t testing.TB, cfg testSetup) (*Proxy, string) {
	t.Helper()
	p, err := newProxy(t, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := p.Plugin().WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(p, server.Options{H2C: true})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return p, ln.Addr().String()
}

// A trailers-only answer of the upstream (one HEADERS frame with
// grpc-status and END_STREAM, no body) reaches the client as one too,
// every time: were the proxy to flush its headers before the handler
// returns (ReverseProxy's immediate flush, golang/go#56317), they would go
// out without END_STREAM, followed by an empty DATA frame ending the
// stream, and the client would see Internal "server closed the stream
// without sending trailers" instead of the upstream's status. That race
// is lost now and then, so the test makes many calls.
func TestGRPCTrailersOnlyAnswersStayTrailersOnly(t *testing.T) {
	const calls = 1000
	g := startGRPCRig(t, false, false)
	ctx := g.ctx(t, g.token)
	req := &testpb.SimpleRequest{ResponseStatus: &testpb.EchoStatus{Code: int32(codes.ResourceExhausted), Message: "quota"}}
	failed := 0
	var last error
	for range calls {
		_, err := g.client.UnaryCall(ctx, req)
		if st := status.Convert(err); st.Code() != codes.ResourceExhausted || st.Message() != "quota" {
			failed++
			last = err
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d trailers-only answers lost their status, the last as %v", failed, calls, last)
	}
}
