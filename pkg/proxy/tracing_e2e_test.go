package proxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/internal/tracing/otlpexport"
	"github.com/idp-proxy/idp-proxy/internal/tracing/otlptest"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/memstore"
)

// TestTraceThroughProxyIntoShortener: the proxy and the shortener, each
// with the tracer provider its binary sets up from the OTEL_* variables,
// export to one real OTLP receiver; a request through the proxy is one
// trace: the proxy's request span, its authorize and upstream spans, the
// shortener's request span under the upstream span (the shortener trusts
// the proxy's address) and the store call under that.
func TestTraceThroughProxyIntoShortener(t *testing.T) {
	rc := otlptest.NewHTTP(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.Endpoint())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
	t.Setenv("OTEL_TRACES_SAMPLER_ARG", "1.0")
	t.Setenv("OTEL_SERVICE_NAME", "")
	setup := func(name string) *otlpexport.Provider {
		p, err := otlpexport.Setup(t.Context(), otlpexport.Options{ServiceName: name})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	proxyTP, shortTP := setup("idp-proxy"), setup("shortener")

	store := memstore.New()
	t.Cleanup(func() { _ = store.Close() })
	svc, err := shortener.New(store, shortener.Options{BaseURL: "https://sho.rt", TracerProvider: shortTP.TracerProvider()})
	if err != nil {
		t.Fatal(err)
	}
	h, err := shortener.NewHandler(svc, shortener.HandlerOptions{
		TracerProvider:      shortTP.TracerProvider(),
		TrustedTraceParents: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
	})
	if err != nil {
		t.Fatal(err)
	}
	upstream := httptest.NewServer(h)
	t.Cleanup(upstream.Close)

	idpSrv := idptest.NewServer(t, idptest.Options{Clients: []idptest.Client{svcReporter}})
	cfg := testConfig(idpSrv, upstream.URL)
	cfg.IDP.TracerProvider = proxyTP.TracerProvider()
	_, ps := startProxy(t, cfg, Options{TracerProvider: proxyTP.TracerProvider()}, true)

	tok := idpSrv.Mint(map[string]any{"aud": "shortener", "realm_access": map[string]any{"roles": []string{"creator"}}})
	resp, body := do(t, "POST", ps.URL+"/shorten", tok, map[string]string{"Content-Type": "application/json"}, `{"url":"https://example.com/private-target"}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /shorten through the proxy: %d %s", resp.StatusCode, body)
	}
	for _, p := range []*otlpexport.Provider{proxyTP, shortTP} {
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}

	spans := rc.Spans()
	find := func(service, name string) otlptest.Span {
		for _, s := range spans {
			if s.Service == service && s.Name == name {
				return s
			}
		}
		t.Fatalf("no %s span %q:\n%s", service, name, otlptest.Dump(spans))
		return otlptest.Span{}
	}
	preq := find("idp-proxy", "POST")
	paz := find("idp-proxy", "proxy.authorize")
	pup := find("idp-proxy", "proxy.upstream")
	sreq := find("shortener", "POST /shorten")
	screate := find("shortener", "store.Create")
	for _, s := range []otlptest.Span{paz, pup, sreq, screate} {
		if s.TraceID != preq.TraceID {
			t.Fatalf("%s %s is in another trace:\n%s", s.Service, s.Name, otlptest.Dump(spans))
		}
	}
	if preq.ParentID != "" || paz.ParentID != preq.SpanID || pup.ParentID != preq.SpanID ||
		sreq.ParentID != pup.SpanID || screate.ParentID != sreq.SpanID {
		t.Fatalf("the spans do not nest proxy → upstream → shortener → store:\n%s", otlptest.Dump(spans))
	}
	if d := otlptest.Dump(spans); strings.Contains(d, tok) || strings.Contains(d, "private-target") {
		t.Fatalf("a span carries the token or the URL:\n%s", d)
	}
}
