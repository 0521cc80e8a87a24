package tracing_test

import (
	"net"
	"net/http/httptest"
	"net/netip"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/idp-proxy/idp-proxy/internal/tracing"
)

// FuzzServerStart: whatever traceparent, tracestate and peer address a
// request carries, Start does not panic, always gives a valid span, and
// continues the caller's trace only for a peer in the trusted prefix.
func FuzzServerStart(f *testing.F) {
	f.Add("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "vendor=1", "10.1.2.3:80")
	f.Add("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "", "192.0.2.1:1")
	f.Add("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "a=b,c=d", "[::ffff:10.0.0.1]:1")
	f.Add("ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "=,", "10.0.0.1")
	f.Add("00-00000000000000000000000000000000-0000000000000000-00", "", "garbage")
	f.Add("", "", "")
	trusted := netip.MustParsePrefix("10.0.0.0/8")
	srv := tracing.NewServer(sdktrace.NewTracerProvider(), "fuzz", []netip.Prefix{trusted})
	f.Fuzz(func(t *testing.T, parent, state, remote string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		r.Header["Traceparent"] = []string{parent}
		r.Header["Tracestate"] = []string{state}
		_, span := srv.Start(r, "fuzz")
		defer span.End()
		if !span.SpanContext().IsValid() {
			t.Fatal("no valid span context")
		}
		if span.(sdktrace.ReadOnlySpan).Parent().IsValid() && !peerIn(remote, trusted) {
			t.Fatalf("peer %q outside %s continued the caller's trace", remote, trusted)
		}
	})
}

// peerIn reports whether the address of remote ("host:port" or a bare
// address) is in p.
func peerIn(remote string, p netip.Prefix) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	return err == nil && p.Contains(a.Unmap())
}
