package proxy

import (
	"io"
	"net/http"
	"net/http/httputil"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/idp-proxy/idp-proxy/internal/tracing"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// tracerName is the instrumentation scope of the proxy's spans.
const tracerName = "github.com/idp-proxy/idp-proxy/pkg/proxy"

// Span attribute keys of the proxy. No value is ever a token, a cookie, a
// query string or a claim value.
const (
	attrRule     = attribute.Key("proxy.rule")     // the rule's label: its pattern, or (default), (auth), ...
	attrDecision = attribute.Key("proxy.decision") // allowed, public, no_token, invalid_token, ...
)

// startRequestSpan starts the server span of r (tracing is on).
func (p *Proxy) startRequestSpan(r *http.Request, rid string) (*http.Request, trace.Span) {
	ctx, span := p.ts.Start(r, r.Method,
		attribute.String("http.request.method", r.Method),
		attribute.String("url.path", r.URL.Path),
		attribute.String("proxy.request_id", rid))
	return r.WithContext(ctx), span
}

// endRequestSpan records the verdict and the status on span and ends it.
func endRequestSpan(span trace.Span, v verdict, status int) {
	span.SetAttributes(attrRule.String(v.rule.label), attrDecision.String(v.dec.String()),
		attribute.Int("http.response.status_code", status))
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	span.End()
}

// authorizeSpan records the plugin's verdict on a rule: the rule, the
// proxy's decision, the issuer and whether the verified-token cache
// answered. The span starts at t0, when the plugin was asked.
func (p *Proxy) authorizeSpan(r *http.Request, rl *rule, v idp.Verdict, t0 time.Time) {
	_, span := p.tracer.Start(r.Context(), "proxy.authorize", trace.WithTimestamp(t0))
	dec := decisionOf(v.Outcome)
	if rl.policy == policyPublic {
		dec = decPublic
	}
	span.SetAttributes(attrRule.String(rl.label), attrDecision.String(dec.String()),
		idp.AttrIssuer.String(p.plugin.Issuer()))
	idp.SetVerdictAttributes(span, v)
	span.End()
}

// startUpstreamSpan starts the proxy.upstream client span of an upstream
// request and sends its trace context upstream (replacing the client's,
// which rewrite forwarded as any other header). Called by rewrite, so
// that the headers are set on the request ReverseProxy owns; the
// transport ends the span.
func (p *Proxy) startUpstreamSpan(pr *httputil.ProxyRequest) {
	ctx, _ := p.tracer.Start(pr.Out.Context(), "proxy.upstream", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("http.request.method", pr.Out.Method),
			attribute.String("server.address", pr.Out.URL.Host)))
	tracing.Inject(ctx, pr.Out.Header)
	pr.Out = pr.Out.WithContext(ctx)
}

// tracedTransport ends the proxy.upstream span that rewrite started, when
// the upstream's body has been read (or at once on a failure).
type tracedTransport struct {
	rt http.RoundTripper
}

func (t tracedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	span := trace.SpanFromContext(r.Context())
	resp, err := t.rt.RoundTrip(r)
	if err != nil {
		span.SetStatus(codes.Error, "the upstream could not be reached")
		span.End()
		return resp, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 500 {
		span.SetStatus(codes.Error, http.StatusText(resp.StatusCode))
	}
	if resp.StatusCode == http.StatusSwitchingProtocols || resp.Body == nil {
		// ReverseProxy needs the upgraded connection's own body.
		span.End()
		return resp, nil
	}
	resp.Body = &spanBody{ReadCloser: resp.Body, span: span}
	return resp, nil
}

// spanBody ends the upstream span when the response body is closed: the
// round trip includes the body.
type spanBody struct {
	io.ReadCloser
	span trace.Span
}

func (b *spanBody) Close() error {
	err := b.ReadCloser.Close()
	b.span.End()
	return err
}
