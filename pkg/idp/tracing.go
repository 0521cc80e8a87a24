package idp

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of the plugin's spans.
const tracerName = "github.com/idp-proxy/idp-proxy/pkg/idp"

// Span attribute keys. Values are never tokens, cookies, query strings or
// claim values.
const (
	AttrIssuer  = attribute.Key("idp.issuer")  // a configured issuer URL: the token's once it is valid, else the primary one
	AttrCache   = attribute.Key("idp.cache")   // "hit" or "miss": did the verified-token cache answer
	AttrOutcome = attribute.Key("idp.outcome") // the Outcome's name
	AttrSession = attribute.Key("idp.session") // the token came from a browser session
	AttrClause  = attribute.Key("idp.clause")  // Verdict.Clause: the rule's clause that refused
	// AttrDPoPCheck names the proof-of-possession check that refused
	// (PossessionCheck): "htm", "jti", "x5t#S256", ...
	AttrDPoPCheck = attribute.Key("idp.dpop.check")
	// AttrIssuerName is the name of the trusted issuer of the token
	// (User.IssuerName), when it was valid.
	AttrIssuerName = attribute.Key("idp.issuer.name")
)

// startSpan starts a span of the plugin's tracer; without one it returns
// ctx and a no-op span, allocating nothing.
func (p *Plugin) startSpan(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	if p.tracer == nil {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return p.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(AttrIssuer.String(p.issuer)))
}

// authorize is Authorize inside an idp.authorize span when the plugin
// traces.
func (p *Plugin) authorize(r *http.Request, guards []Guard) Verdict {
	if p.tracer == nil {
		return p.Authorize(r, guards...)
	}
	ctx, span := p.startSpan(r.Context(), "idp.authorize", trace.SpanKindInternal)
	defer span.End()
	v := p.Authorize(r.WithContext(ctx), guards...)
	SetVerdictAttributes(span, v)
	return v
}

// SetVerdictAttributes records v on span: the outcome, whether the
// verified-token cache answered and whether the token came from a
// session. Unavailable (the keys are not loaded) sets the span's status
// to Error with the outcome's name; refusals of the client's token are
// not the service's errors. Neither the token nor the error's text (which
// may quote a claim) is recorded.
func SetVerdictAttributes(span trace.Span, v Verdict) {
	cache := "miss"
	if v.Cached {
		cache = "hit"
	}
	span.SetAttributes(AttrOutcome.String(v.Outcome.String()), AttrCache.String(cache), AttrSession.Bool(v.Session))
	if v.Clause != "" {
		span.SetAttributes(AttrClause.String(v.Clause)) // the rule's wording, never token content
	}
	if c := PossessionCheck(v.Err); c != "" {
		span.SetAttributes(AttrDPoPCheck.String(c))
	}
	if v.Identity != nil {
		// A configured name, and the configured URL the token's iss was
		// verified to equal (with several issuers, not always the primary
		// one the span started with).
		span.SetAttributes(AttrIssuerName.String(v.Identity.User.IssuerName), AttrIssuer.String(v.Identity.Payload.Issuer))
	}
	if v.Outcome == Unavailable {
		span.SetStatus(codes.Error, v.Outcome.String())
	}
}

// endSpan ends span, marking it failed with what (never an error's text,
// which may quote a provider's answer) when err is not nil.
func endSpan(span trace.Span, err error, what string) {
	if err != nil {
		span.SetStatus(codes.Error, what)
	}
	span.End()
}
