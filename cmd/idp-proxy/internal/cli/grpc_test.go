package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
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
	grpcstatus "google.golang.org/grpc/status"

	"github.com/idp-proxy/idp-proxy/internal/grpctest"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// TestServeGRPC runs `serve` in front of a real gRPC server, h2c on both
// sides (server.h2c, upstream.protocol h2c) and TLS on both sides
// (tls.cert_file, upstream.protocol h2): every streaming kind, refusals
// as gRPC codes, and a server stream idle for longer than the
// write_timeout.
func TestServeGRPC(t *testing.T) {
	for _, tc := range []struct {
		name string
		tls  bool
	}{{"h2c", false}, {"TLS", true}} {
		t.Run(tc.name, func(t *testing.T) {
			idpSrv := idptest.NewServer(t)
			svc := grpctest.New()
			const timeout = 300 * time.Millisecond
			svc.BeforeSend = func(ctx context.Context, i int) error {
				if i == 1 { // idle between the first and second messages
					time.Sleep(3 * timeout)
				}
				return nil
			}
			upstream, listener := "upstream: {url: %q, protocol: h2c}\nserver: {h2c: true, read_timeout: 300ms, write_timeout: 300ms}\n", ""
			var upTLS *tls.Config
			creds := insecure.NewCredentials()
			if tc.tls {
				certFile, keyFile, pool := selfSigned(t)
				cert, err := tls.LoadX509KeyPair(certFile, keyFile)
				if err != nil {
					t.Fatal(err)
				}
				upTLS = &tls.Config{Certificates: []tls.Certificate{cert}}
				upstream = "upstream: {url: %q, protocol: h2, ca_file: " + fmt.Sprintf("%q", certFile) + "}\nserver: {read_timeout: 300ms, write_timeout: 300ms}\n"
				listener = fmt.Sprintf("tls: {cert_file: %q, key_file: %q}\n", certFile, keyFile)
				creds = credentials.NewTLS(&tls.Config{RootCAs: pool})
			}
			up := grpctest.Start(t, svc, upTLS)
			scheme := "http"
			if tc.tls {
				scheme = "https"
			}
			y := fmt.Sprintf(`listen: 127.0.0.1:0
metrics_listen: ""
idp: {server_url: %q, realm: %s, client_id: shortener}
routes:
  - {match: "POST /grpc.testing.TestService/EmptyCall", roles: [admin]}
  - {match: "/grpc.testing.TestService/"}
log: {level: warn}
`, idpSrv.URL, idpSrv.Realm) + fmt.Sprintf(upstream, scheme+"://"+up.Addr) + listener
			cfg := filepath.Join(t.TempDir(), "proxy.yaml")
			if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
				t.Fatal(err)
			}
			proxyAddr, _, logs, _ := startServe(t, nil, "-c", cfg)
			conn, err := grpc.NewClient(proxyAddr, grpc.WithTransportCredentials(creds))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = conn.Close() })
			client := testpb.NewTestServiceClient(conn)
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			authed := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator")))

			// Unary, waiting for the provider's keys (a 503 is UNAVAILABLE).
			var resp *testpb.SimpleResponse
			for {
				resp, err = client.UnaryCall(authed, &testpb.SimpleRequest{FillUsername: true})
				if grpcstatus.Code(err) != codes.Unavailable || ctx.Err() != nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err != nil || resp.GetUsername() != "user-alice" {
				t.Fatalf("unary: %v %v\n%s", resp, err, logs)
			}
			// Server stream, idle for 3 write timeouts in the middle.
			ss, err := client.StreamingOutputCall(authed, &testpb.StreamingOutputCallRequest{
				ResponseParameters: []*testpb.ResponseParameters{{Size: 1}, {Size: 2}},
			})
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= 2; i++ {
				if m, err := ss.Recv(); err != nil || len(m.GetPayload().GetBody()) != i {
					t.Fatalf("server stream message %d: %v", i, err)
				}
			}
			if _, err := ss.Recv(); !errors.Is(err, io.EOF) {
				t.Fatalf("server stream end: %v", err)
			}
			// Client stream.
			cs, err := client.StreamingInputCall(authed)
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				_ = cs.Send(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: make([]byte, 7)}})
			}
			if r, err := cs.CloseAndRecv(); err != nil || r.GetAggregatedPayloadSize() != 21 {
				t.Fatalf("client stream: %v %v", r, err)
			}
			// Bidirectional stream.
			bs, err := client.FullDuplexCall(authed)
			if err != nil {
				t.Fatal(err)
			}
			for i := int32(1); i <= 2; i++ {
				_ = bs.Send(&testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{Size: i}}})
				if m, err := bs.Recv(); err != nil || len(m.GetPayload().GetBody()) != int(i) {
					t.Fatalf("bidi answer %d: %v", i, err)
				}
			}
			_ = bs.CloseSend()
			if _, err := bs.Recv(); !errors.Is(err, io.EOF) {
				t.Fatalf("bidi end: %v", err)
			}
			// Refusals.
			if _, err := client.UnaryCall(ctx, &testpb.SimpleRequest{}); grpcstatus.Code(err) != codes.Unauthenticated {
				t.Errorf("no token: %v", err)
			}
			if _, err := client.EmptyCall(authed, &testpb.Empty{}); grpcstatus.Code(err) != codes.PermissionDenied {
				t.Errorf("no admin role: %v", err)
			}
		})
	}
}

// TestCheckConfigProtocols: check-config refuses a protocol that does not
// fit the upstream's URL, an unknown one, a negative stream_timeout and a
// server.h2c that is no boolean, naming the key.
func TestCheckConfigProtocols(t *testing.T) {
	idpSrv := idptest.NewServer(t)
	for _, c := range []struct{ upstream, extra, want string }{
		{"upstream: {url: http://127.0.0.1:1, protocol: h2}", "", "upstream.protocol h2 is HTTP/2 over TLS"},
		{"upstream: {url: https://127.0.0.1:1, protocol: h2c}", "", "upstream.protocol h2c is HTTP/2 without TLS"},
		{"upstream: {url: http://127.0.0.1:1, protocol: grpc}", "", `upstream.protocol "grpc"`},
		{"upstream: {url: http://127.0.0.1:1, stream_timeout: -1s}", "", "upstream.stream_timeout"},
		{"upstream: {url: http://127.0.0.1:1}", "server: {h2c: maybe}", "h2c"},
		{"upstreams: [{match: a.test/, url: https://127.0.0.1:1, protocol: h2c}]", "", "upstreams[0].protocol h2c"},
	} {
		y := fmt.Sprintf("%s\nidp: {server_url: %q, realm: %s, client_id: shortener}\n%s\n", c.upstream, idpSrv.URL, idpSrv.Realm, c.extra)
		cfg := filepath.Join(t.TempDir(), "proxy.yaml")
		if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
		out, errOut, err := run(t, deps{}, "check-config", cfg)
		if err == nil || !strings.Contains(out+errOut+err.Error(), c.want) {
			t.Errorf("%s %s: %v\n%s%s\nwant %q", c.upstream, c.extra, err, out, errOut, c.want)
		}
	}
	ok := filepath.Join(t.TempDir(), "ok.yaml")
	_ = os.WriteFile(ok, []byte(fmt.Sprintf("upstream: {url: http://127.0.0.1:1, protocol: h2c, stream_timeout: 10m}\nserver: {h2c: true}\nidp: {server_url: %q, realm: %s, client_id: shortener}\n", idpSrv.URL, idpSrv.Realm)), 0o600)
	out, _, err := run(t, deps{}, "check-config", ok)
	if err != nil || !strings.Contains(out, "upstream: http://127.0.0.1:1 (h2c)") || !strings.Contains(out, "(h2c too)") {
		t.Errorf("h2c configuration: %v\n%s", err, out)
	}
}
