package proxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Plugin().WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
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
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
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
				resp, err := g.client.UnaryCall(g.ctx(t, g.token, "x-echo", "ping", "x-auth-request-user", "mallory"),
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
				if got := trl.Get("x-echo-trailer"); len(got) != 1 || got[0] != "ping" {
					t.Errorf("trailer metadata %v", trl)
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
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator")))
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
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator")))
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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
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

// TestGRPCRefusalShape checks the bytes of a refusal: HTTP 200,
// trailers-only (no body), grpc-status and a percent-encoded
// grpc-message, WWW-Authenticate kept; gRPC-Web keeps its content type.
func TestGRPCRefusalShape(t *testing.T) {
	idpSrv := newProvider(t)
	cfg := testConfig(idpSrv, "http://127.0.0.1:1")
	cfg.Routes = grpcRoutes
	_, srv := startProxy(t, cfg, Options{}, true)
	for _, ct := range []string{"application/grpc", "application/grpc+proto", "application/grpc-web+proto"} {
		resp, body := do(t, "POST", srv.URL+"/grpc.testing.TestService/UnaryCall", "", map[string]string{"Content-Type": ct}, "\x00\x00\x00\x00\x00")
		wantCT := "application/grpc"
		if strings.HasPrefix(ct, "application/grpc-web") {
			wantCT = ct
		}
		if resp.StatusCode != 200 || body != "" || resp.Header.Get("Grpc-Status") != "16" ||
			resp.Header.Get("Grpc-Message") == "" || resp.Header.Get("Content-Type") != wantCT ||
			!strings.HasPrefix(resp.Header.Get("Www-Authenticate"), "Bearer") {
			t.Errorf("%s: %d %q %v", ct, resp.StatusCode, body, resp.Header)
		}
	}
	// Not a gRPC call: problem+json as before.
	resp, _ := do(t, "POST", srv.URL+"/grpc.testing.TestService/UnaryCall", "", map[string]string{"Content-Type": "application/grpcx"}, "x")
	if resp.StatusCode != 401 || resp.Header.Get("Grpc-Status") != "" {
		t.Errorf("application/grpcx: %d %v", resp.StatusCode, resp.Header)
	}
}

// TestUpstreamProtocolChecked: the upstream section's protocol must fit
// its URL's scheme; upstreams[] inherit it unless they set their own.
func TestUpstreamProtocolChecked(t *testing.T) {
	idpSrv := newProvider(t)
	for _, c := range []struct {
		url, protocol string
		stream        time.Duration
		want          string // "" when valid
	}{
		{"http://x", ProtocolH2C, 0, ""},
		{"https://x", ProtocolH2, time.Minute, ""},
		{"http://x", ProtocolHTTP1, 0, ""},
		{"https://x", ProtocolAuto, 0, ""},
		{"http://x", ProtocolH2, 0, "upstream.protocol h2 is HTTP/2 over TLS"},
		{"https://x", ProtocolH2C, 0, "upstream.protocol h2c is HTTP/2 without TLS"},
		{"http://x", "HTTP2", 0, `upstream.protocol "HTTP2"`},
		{"http://x", "", -time.Second, "upstream.stream_timeout must not be negative"},
	} {
		s := testConfig(idpSrv, c.url)
		s.Upstream.Protocol, s.Upstream.StreamTimeout = c.protocol, c.stream
		_, err := Compile(s.Config, s.IDP)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s %q %s: %v, want %q", c.url, c.protocol, c.stream, err, c.want)
		}
	}
	// Inherited: the section's h2c, with an https upstream of its own
	// that says auto.
	s := testConfig(idpSrv, "")
	s.Upstream.Protocol = ProtocolH2C
	s.Upstreams = []UpstreamRoute{
		{Match: "a.test/", UpstreamConfig: UpstreamConfig{URL: "http://x"}},
		{Match: "b.test/", UpstreamConfig: UpstreamConfig{URL: "https://y", Protocol: ProtocolAuto}},
	}
	if _, err := Compile(s.Config, s.IDP); err != nil {
		t.Errorf("inherited protocol: %v", err)
	}
	s.Upstreams[1].Protocol = ""
	if _, err := Compile(s.Config, s.IDP); err == nil || !strings.Contains(err.Error(), "upstreams[1].protocol h2c") {
		t.Errorf("inherited h2c on https: %v", err)
	}
}

// TestUpstreamProtocols: the protocol the proxy speaks to the upstream,
// as the upstream sees it.
func TestUpstreamProtocols(t *testing.T) {
	idpSrv := newProvider(t)
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, r.Proto) })
	tlsUp := httptest.NewUnstartedServer(echo)
	tlsUp.EnableHTTP2 = true
	tlsUp.StartTLS()
	t.Cleanup(tlsUp.Close)
	plainUp := httptest.NewUnstartedServer(echo)
	plainUp.Config.Protocols = new(http.Protocols)
	plainUp.Config.Protocols.SetHTTP1(true)
	plainUp.Config.Protocols.SetUnencryptedHTTP2(true)
	plainUp.Start()
	t.Cleanup(plainUp.Close)
	ca := writePEM(t, tlsUp)
	for _, c := range []struct{ url, protocol, want string }{
		{tlsUp.URL, ProtocolAuto, "HTTP/2.0"},
		{tlsUp.URL, ProtocolH2, "HTTP/2.0"},
		{tlsUp.URL, ProtocolHTTP1, "HTTP/1.1"},
		{plainUp.URL, ProtocolAuto, "HTTP/1.1"},
		{plainUp.URL, ProtocolH2C, "HTTP/2.0"},
	} {
		cfg := testConfig(idpSrv, c.url)
		cfg.Upstream.Protocol, cfg.Upstream.CAFile = c.protocol, ca
		cfg.Routes = []RouteConfig{{Match: "/", Public: true}}
		_, srv := startProxy(t, cfg, Options{}, false)
		if resp, body := do(t, "GET", srv.URL+"/", "", nil, ""); resp.StatusCode != 200 || body != c.want {
			t.Errorf("%s %q: %d %q, want %s", c.url, c.protocol, resp.StatusCode, body, c.want)
		}
	}
}

func TestGRPCPercentEncode(t *testing.T) {
	for in, want := range map[string]string{
		"plain message":  "plain message",
		"100% sure":      "100%25 sure",
		"ünï\nx":         "%C3%BCn%C3%AF%0Ax",
		"":               "",
		"tab\there~\x7f": "tab%09here~%7F",
	} {
		if got := grpcPercentEncode(in); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

// TestGRPCMethodRules: a rule's ServeMux pattern names a gRPC method
// ("POST /pkg.Service/Method") or a whole service ("/pkg.Service/").
func TestGRPCMethodRules(t *testing.T) {
	idpSrv := newProvider(t)
	cfg := testConfig(idpSrv, "http://127.0.0.1:1")
	cfg.Routes = append([]RouteConfig{{Match: "POST /grpc.health.v1.Health/Check", Public: true}}, grpcRoutes...)
	p, err := newProxy(t, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, rule string }{
		{"/grpc.testing.TestService/EmptyCall", "POST /grpc.testing.TestService/EmptyCall"},
		{"/grpc.testing.TestService/UnaryCall", "/grpc.testing.TestService/"},
		{"/grpc.health.v1.Health/Check", "POST /grpc.health.v1.Health/Check"},
		{"/grpc.health.v1.Health/Watch", "(default)"},
	} {
		d, err := p.Decide(context.Background(), "POST", c.path, "")
		if err != nil || d.Rule != c.rule {
			t.Errorf("%s: rule %q (%v), want %q", c.path, d.Rule, err, c.rule)
		}
	}
}

// selfSignedPair returns a certificate for 127.0.0.1 and the path of a
// PEM file holding it (as a CA file).
func selfSignedPair(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, file
}

var _ http.Handler = (*Proxy)(nil)
