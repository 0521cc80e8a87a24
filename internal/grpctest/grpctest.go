// Package grpctest runs a real gRPC server (grpc-go's interoperability
// TestService) for the project's tests of gRPC through the proxy: every
// streaming kind, metadata echoed as headers and trailers, statuses on
// request, and hooks to hold a stream idle or see it cancelled. Not for
// production.
package grpctest

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Service is grpc_testing.TestService:
//
//   - every call echoes the request's "x-echo" metadata as the response's
//     "x-echo" header and "x-echo-trailer" trailer, and with it the binary
//     "x-echo-bin" as a header;
//   - UnaryCall fills Username with the "x-auth-request-user" metadata
//     (the identity the proxy sends) and returns ResponseStatus when set;
//   - StreamingOutputCall calls BeforeSend before each message (to hold
//     the stream idle), then ends with ResponseStatus;
//   - FullDuplexCall answers each request with a payload of each of its
//     ResponseParameters' sizes, until the client closes its side.
//
// Cancelled receives the method name of every call whose context ended
// before the handler did (the client, or the proxy, cancelled it).
type Service struct {
	testpb.UnimplementedTestServiceServer
	// BeforeSend, when set, is called before the i-th message of a
	// server stream; an error ends the stream with it.
	BeforeSend func(ctx context.Context, i int) error
	Cancelled  chan string
}

// New returns a Service whose Cancelled channel holds 16 names.
func New() *Service { return &Service{Cancelled: make(chan string, 16)} }

func echo(ctx context.Context) (header, trailer metadata.MD) {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("x-echo"); len(v) > 0 {
		header, trailer = metadata.Pairs("x-echo", strings.Join(v, ",")), metadata.Pairs("x-echo-trailer", strings.Join(v, ","))
		if b := md.Get("x-echo-bin"); len(b) > 0 {
			header.Set("x-echo-bin", b...)
		}
	}
	return header, trailer
}

// watch returns the deferred check of a handler: its context ended
// before it returned.
func (s *Service) watch(ctx context.Context, method string) func() {
	return func() {
		if ctx.Err() != nil {
			select {
			case s.Cancelled <- method:
			default:
			}
		}
	}
}

func echoStatus(es *testpb.EchoStatus) error {
	if es == nil || es.Code == 0 {
		return nil
	}
	return status.Error(codes.Code(es.Code), es.Message)
}

func (s *Service) EmptyCall(ctx context.Context, _ *testpb.Empty) (*testpb.Empty, error) {
	return &testpb.Empty{}, nil
}

func (s *Service) UnaryCall(ctx context.Context, in *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	h, tr := echo(ctx)
	if h != nil {
		_ = grpc.SetHeader(ctx, h)
		_ = grpc.SetTrailer(ctx, tr)
	}
	if err := echoStatus(in.GetResponseStatus()); err != nil {
		return nil, err
	}
	md, _ := metadata.FromIncomingContext(ctx)
	out := &testpb.SimpleResponse{Payload: &testpb.Payload{Body: make([]byte, in.GetResponseSize())}}
	if in.GetFillUsername() {
		out.Username = strings.Join(md.Get("x-auth-request-user"), ",")
	}
	return out, nil
}

func (s *Service) StreamingOutputCall(in *testpb.StreamingOutputCallRequest, st grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	ctx := st.Context()
	defer s.watch(ctx, "StreamingOutputCall")()
	h, tr := echo(ctx)
	if h != nil {
		st.SetTrailer(tr)
	}
	for i, p := range in.GetResponseParameters() {
		if s.BeforeSend != nil {
			if err := s.BeforeSend(ctx, i); err != nil {
				return err
			}
		}
		if i == 0 && h != nil {
			_ = st.SendHeader(h)
		}
		if err := st.Send(&testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: make([]byte, p.GetSize())}}); err != nil {
			return err
		}
	}
	return echoStatus(in.GetResponseStatus())
}

func (s *Service) StreamingInputCall(st grpc.ClientStreamingServer[testpb.StreamingInputCallRequest, testpb.StreamingInputCallResponse]) error {
	defer s.watch(st.Context(), "StreamingInputCall")()
	var n int32
	for {
		in, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return st.SendAndClose(&testpb.StreamingInputCallResponse{AggregatedPayloadSize: n})
		}
		if err != nil {
			return err
		}
		n += int32(len(in.GetPayload().GetBody()))
	}
}

func (s *Service) FullDuplexCall(st grpc.BidiStreamingServer[testpb.StreamingOutputCallRequest, testpb.StreamingOutputCallResponse]) error {
	ctx := st.Context()
	defer s.watch(ctx, "FullDuplexCall")()
	if h, tr := echo(ctx); h != nil {
		_ = st.SendHeader(h)
		st.SetTrailer(tr)
	}
	for {
		in, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, p := range in.GetResponseParameters() {
			if err := st.Send(&testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: make([]byte, p.GetSize())}}); err != nil {
				return err
			}
		}
		if err := echoStatus(in.GetResponseStatus()); err != nil {
			return err
		}
	}
}

// Server is a running gRPC server on 127.0.0.1.
type Server struct {
	Addr string // host:port
	srv  *grpc.Server
	once sync.Once
}

// Start serves svc on 127.0.0.1: over TLS with cfg, else without TLS
// (h2c, as gRPC servers listen). It stops when t ends.
func Start(t testing.TB, svc testpb.TestServiceServer, cfg *tls.Config) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var opts []grpc.ServerOption
	if cfg != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg)))
	}
	srv := grpc.NewServer(opts...)
	testpb.RegisterTestServiceServer(srv, svc)
	go func() { _ = srv.Serve(ln) }()
	s := &Server{Addr: ln.Addr().String(), srv: srv}
	t.Cleanup(s.Stop)
	return s
}

// Stop stops the server at once, resetting the calls in flight.
func (s *Server) Stop() { s.once.Do(s.srv.Stop) }
