package proxy

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
)

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
		d, err := p.Decide(t.Context(), "POST", c.path, "")
		if err != nil || d.Rule != c.rule {
			t.Errorf("%s: rule %q (%v), want %q", c.path, d.Rule, err, c.rule)
		}
	}
}

// TestGRPCCodes: the gRPC code of each HTTP status the proxy answers
// with, as a gRPC client reads it (google.golang.org/grpc/codes).
func TestGRPCCodes(t *testing.T) {
	for status, want := range map[int]codes.Code{
		401: codes.Unauthenticated,
		403: codes.PermissionDenied,
		400: codes.InvalidArgument,
		404: codes.Unimplemented,
		405: codes.Unimplemented,
		421: codes.Unimplemented,
		408: codes.DeadlineExceeded,
		504: codes.DeadlineExceeded,
		413: codes.ResourceExhausted,
		429: codes.ResourceExhausted,
		502: codes.Unavailable,
		503: codes.Unavailable,
		500: codes.Internal,
		418: codes.Unknown,
	} {
		if got := codes.Code(grpcCode(status)); got != want {
			t.Errorf("HTTP %d: %v, want %v", status, got, want)
		}
	}
}
