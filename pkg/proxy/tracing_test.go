package proxy

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// spansNamed returns the ended spans named name.
func spansNamed(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func attrOf(s sdktrace.ReadOnlySpan, k attribute.Key) string {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return kv.Value.String()
		}
	}
	return ""
}

const callerParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// TestTracing: a request gives a server span, a proxy.authorize span
// (rule, decision, issuer, cache) and a proxy.upstream span whose
// context the upstream receives as traceparent; the caller's
// traceparent is continued only when it is trusted, and no span carries
// the token, the query or a claim value.
func TestTracing(t *testing.T) {
	for _, trusted := range []bool{true, false} {
		t.Run(map[bool]string{true: "trusted", false: "untrusted"}[trusted], func(t *testing.T) {
			srv := newProvider(t)
			up := newUpstream(t)
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			o := Options{TracerProvider: tp}
			if trusted {
				o.TrustedTraceParents = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
			} else {
				o.TrustedTraceParents = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
			}
			_, ps := startProxy(t, testConfig(srv, up.URL), o, true)
			tok := srv.Mint(map[string]any{"aud": "shortener", "realm_access": map[string]any{"roles": []string{"creator"}}, "email": "claim-value@example.com"})
			for range 2 {
				resp, _ := do(t, "POST", ps.URL+"/shorten?secret=query-value", tok,
					map[string]string{"Traceparent": callerParent, "Tracestate": "vendor=opaque"}, `{"url":"https://example.com"}`)
				if resp.StatusCode != 200 {
					t.Fatalf("status %d", resp.StatusCode)
				}
			}
			reqs := spansNamed(rec, "POST")
			az := spansNamed(rec, "proxy.authorize")
			ups := spansNamed(rec, "proxy.upstream")
			if len(reqs) != 2 || len(az) != 2 || len(ups) != 2 {
				t.Fatalf("spans: %d request, %d authorize, %d upstream; want 2 each", len(reqs), len(az), len(ups))
			}
			for i, s := range reqs {
				if got := attrOf(s, "url.path"); got != "/shorten" {
					t.Errorf("url.path %q", got)
				}
				if attrOf(s, attrRule) != "POST /shorten" || attrOf(s, attrDecision) != "allowed" || attrOf(s, "http.response.status_code") != "200" {
					t.Errorf("request span attributes %v", s.Attributes())
				}
				cont := s.Parent().TraceID().String() == "0af7651916cd43dd8448eb211c80319c" && s.Parent().SpanID().String() == "b7ad6b7169203331"
				if cont != trusted {
					t.Errorf("request span continues the caller's trace: %v, want %v", cont, trusted)
				}
				if !trusted && (len(s.Links()) != 1 || s.Links()[0].SpanContext.SpanID().String() != "b7ad6b7169203331") {
					t.Errorf("untrusted traceparent not linked: %v", s.Links())
				}
				a := az[i]
				if a.Parent().SpanID() != s.SpanContext().SpanID() {
					t.Error("proxy.authorize is not a child of the request span")
				}
				wantCache := []string{"miss", "hit"}[i]
				if attrOf(a, attrRule) != "POST /shorten" || attrOf(a, attrDecision) != "allowed" ||
					attrOf(a, "idp.cache") != wantCache || attrOf(a, "idp.issuer") != srv.Issuer {
					t.Errorf("proxy.authorize #%d attributes %v, want cache %s", i, a.Attributes(), wantCache)
				}
				u := ups[i]
				if u.Parent().SpanID() != s.SpanContext().SpanID() {
					t.Error("proxy.upstream is not a child of the request span")
				}
				got := up.reqs[i].Header.Get("Traceparent")
				want := "00-" + u.SpanContext().TraceID().String() + "-" + u.SpanContext().SpanID().String() + "-01"
				if got != want {
					t.Errorf("upstream traceparent %q, want the proxy.upstream span's %q", got, want)
				}
				if ts := up.reqs[i].Header.Get("Tracestate"); trusted != (ts == "vendor=opaque") {
					t.Errorf("upstream tracestate %q (trusted %v)", ts, trusted)
				}
			}
			for _, s := range rec.Ended() {
				texts := []string{s.Name(), s.Status().Description}
				for _, kv := range s.Attributes() {
					texts = append(texts, kv.Value.String())
				}
				for _, txt := range texts {
					for _, secret := range []string{tok, "query-value", "claim-value", "user-"} {
						if strings.Contains(txt, secret) {
							t.Errorf("span %s carries %q", s.Name(), txt)
						}
					}
				}
			}
		})
	}
}

// TestNoTracingForwardsTraceparent: without a TracerProvider the proxy
// records nothing and forwards the client's trace context untouched, as
// before tracing existed.
func TestNoTracingForwardsTraceparent(t *testing.T) {
	srv := newProvider(t)
	up := newUpstream(t)
	_, ps := startProxy(t, testConfig(srv, up.URL), Options{}, true)
	resp, _ := do(t, "GET", ps.URL+"/health", "", map[string]string{"Traceparent": callerParent, "Tracestate": "vendor=opaque"}, "")
	if resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	if h := up.last(t).Header; h.Get("Traceparent") != callerParent || h.Get("Tracestate") != "vendor=opaque" {
		t.Fatalf("upstream got traceparent %q tracestate %q", h.Get("Traceparent"), h.Get("Tracestate"))
	}
}

// TestTracingUpstreamFailure: an unreachable upstream marks the upstream
// and request spans as errors.
func TestTracingUpstreamFailure(t *testing.T) {
	srv := newProvider(t)
	up := newUpstream(t)
	url := up.URL
	up.Close()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	_, ps := startProxy(t, testConfig(srv, url), Options{TracerProvider: tp}, true)
	resp, _ := do(t, "GET", ps.URL+"/health", "", nil, "")
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatal(resp.StatusCode)
	}
	for _, name := range []string{"proxy.upstream", "GET"} {
		s := spansNamed(rec, name)
		if len(s) != 1 || s[0].Status().Code.String() != "Error" {
			t.Errorf("%s spans: %v", name, s)
		}
	}
}
