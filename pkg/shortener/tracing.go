package shortener

import (
	"context"
	"errors"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/idp-proxy/idp-proxy/internal/statuswriter"
	"github.com/idp-proxy/idp-proxy/internal/tracing"
)

// tracerName is the instrumentation scope of the shortener's spans.
const tracerName = "github.com/idp-proxy/idp-proxy/pkg/shortener"

// serveTraced serves r inside a server span named after the route that
// served it ("GET /{code}"): method, path (never the query), route and
// status. A caller's traceparent is continued only from the trusted
// addresses (HandlerOptions.TrustedTraceParents).
func (h *Handler) serveTraced(w http.ResponseWriter, r *http.Request) {
	ctx, span := h.ts.Start(r, r.Method,
		attribute.String("http.request.method", r.Method),
		attribute.String("url.path", r.URL.Path))
	r = r.WithContext(ctx)
	sw := &statuswriter.Writer{ResponseWriter: w}
	h.dispatch.serve(sw, r)
	status := sw.Status
	if status == 0 {
		status = http.StatusOK
	}
	if r.Pattern != "" {
		span.SetName(r.Method + " " + routePath(r.Pattern))
		span.SetAttributes(attribute.String("http.route", routePath(r.Pattern)))
	}
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	span.End()
}

// routePath is the path of a ServeMux pattern "[METHOD ][HOST]/PATH".
func routePath(pattern string) string {
	for i := 0; i < len(pattern); i++ {
		if pattern[i] == '/' {
			return pattern[i:]
		}
	}
	return pattern
}

// tracedStore records every Store call as a client span (store.Create,
// store.Get, ...), with the operation's name only: never a code, an
// owner or a URL.
type tracedStore struct {
	s      Store
	tracer trace.Tracer
}

func newTracedStore(s Store, tp trace.TracerProvider) Store {
	return tracedStore{s: s, tracer: tp.Tracer(tracerName)}
}

func (t tracedStore) start(ctx context.Context, op string) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, "store."+op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("db.operation.name", op)))
}

// end records err (its kind: not found and duplicates are answers, not
// failures) and ends span.
func end(span trace.Span, err error) {
	if err != nil {
		if kind := storeAnswer(err); kind != "" {
			span.SetAttributes(attribute.String("shortener.store.result", kind))
		} else {
			span.SetStatus(codes.Error, "the store failed")
		}
	}
	span.End()
}

func (t tracedStore) Create(ctx context.Context, l Link) error {
	ctx, span := t.start(ctx, "Create")
	err := t.s.Create(ctx, l)
	end(span, err)
	return err
}

func (t tracedStore) Get(ctx context.Context, code string) (Link, error) {
	ctx, span := t.start(ctx, "Get")
	l, err := t.s.Get(ctx, code)
	end(span, err)
	return l, err
}

func (t tracedStore) List(ctx context.Context, owner string, after Cursor, limit int) ([]Link, error) {
	ctx, span := t.start(ctx, "List")
	ls, err := t.s.List(ctx, owner, after, limit)
	end(span, err)
	return ls, err
}

func (t tracedStore) Delete(ctx context.Context, code, owner string) error {
	ctx, span := t.start(ctx, "Delete")
	err := t.s.Delete(ctx, code, owner)
	end(span, err)
	return err
}

func (t tracedStore) Visit(ctx context.Context, code string, now time.Time) (Link, error) {
	ctx, span := t.start(ctx, "Visit")
	l, err := t.s.Visit(ctx, code, now)
	end(span, err)
	return l, err
}

func (t tracedStore) Ping(ctx context.Context) error {
	ctx, span := t.start(ctx, "Ping")
	err := t.s.Ping(ctx)
	end(span, err)
	return err
}

func (t tracedStore) Edit(ctx context.Context, code, owner string, e LinkEdit) (Link, error) {
	ctx, span := t.start(ctx, "Edit")
	l, err := t.s.Edit(ctx, code, owner, e)
	end(span, err)
	return l, err
}

func (t tracedStore) Close() error { return t.s.Close() }

// storeAnswer names the errors that are the store's answers rather than
// its failures ("" for a failure).
func storeAnswer(err error) string {
	switch {
	case errors.Is(err, ErrNotFound):
		return "not_found"
	case errors.Is(err, ErrDuplicate):
		return "duplicate"
	case errors.Is(err, ErrGone):
		return "gone"
	case errors.Is(err, ErrOverLimit):
		return "over_limit"
	}
	return ""
}

// traceServer is the server-span starter of o, nil without tracing.
func traceServer(o HandlerOptions) *tracing.Server {
	return tracing.NewServer(o.TracerProvider, tracerName, o.TrustedTraceParents)
}

func (t tracedStore) WriteVisits(ctx context.Context, b VisitBatch) error {
	ctx, span := t.start(ctx, "WriteVisits")
	span.SetAttributes(attribute.Int("shortener.links", len(b.Counts)), attribute.Int("shortener.visits", len(b.Events)))
	err := t.s.WriteVisits(ctx, b)
	end(span, err)
	return err
}

func (t tracedStore) PruneVisits(ctx context.Context, before time.Time) error {
	ctx, span := t.start(ctx, "PruneVisits")
	err := t.s.PruneVisits(ctx, before)
	end(span, err)
	return err
}

func (t tracedStore) VisitStats(ctx context.Context, code string, q StatsQuery) (VisitStats, error) {
	ctx, span := t.start(ctx, "VisitStats")
	st, err := t.s.VisitStats(ctx, code, q)
	end(span, err)
	return st, err
}
