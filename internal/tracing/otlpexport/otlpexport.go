// Package otlpexport sets up the OpenTelemetry SDK for idp-proxy and the
// shortener: a tracer provider with a batching OTLP exporter, configured
// by the standard OTEL_* environment variables:
// OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// OTEL_EXPORTER_OTLP_PROTOCOL and OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
// ("http/protobuf", the default, or "grpc"), OTEL_EXPORTER_OTLP_HEADERS,
// OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG, OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES,
// and the batch processor's OTEL_BSP_*. It is apart from package tracing
// so that the libraries (pkg/proxy, pkg/shortener) do not link the
// exporters: only the binaries do.
package otlpexport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Options configure Setup.
type Options struct {
	// ServiceName is the service.name resource attribute unless
	// OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES)
	// names another. Required.
	ServiceName string
	// ServiceVersion is the service.version resource attribute. [none]
	ServiceVersion string
	// Getenv reads the environment. [os.Getenv] The exporter and the SDK
	// read the process environment themselves: Getenv only serves the
	// checks Setup makes first (protocol, sampler).
	Getenv func(string) string
	// Logger receives the SDK's own reports (failed exports, dropped
	// spans), which it would otherwise print on stderr; see
	// routeSDKDiagnostics. [discard]
	Logger *slog.Logger
	// FlushTimeout bounds Provider.Shutdown: the spans still queued are
	// given this long to reach the collector, so that a collector that
	// hangs delays the stop by no more. [1s]
	FlushTimeout time.Duration
}

// DefaultFlushTimeout is Options.FlushTimeout's default.
const DefaultFlushTimeout = time.Second

// Provider is the process's tracer provider and its exporter.
type Provider struct {
	tp       *sdktrace.TracerProvider
	protocol string
	flush    time.Duration
}

// TracerProvider returns the provider to give to pkg/idp, pkg/proxy and
// pkg/shortener.
func (p *Provider) TracerProvider() trace.TracerProvider { return p.tp }

// Protocol is the OTLP protocol in use: "http/protobuf" or "grpc".
func (p *Provider) Protocol() string { return p.protocol }

// Shutdown exports the spans still queued and stops the exporter, waiting
// at most Options.FlushTimeout (or until ctx is done): spans the collector
// has not taken by then are lost.
func (p *Provider) Shutdown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.flush)
	defer cancel()
	if err := p.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("otlpexport: shutdown: %w", err)
	}
	return nil
}

// Protocols are the values of OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL that
// Setup accepts.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// samplers are the values of OTEL_TRACES_SAMPLER that the SDK implements.
var samplers = []string{"always_on", "always_off", "traceidratio",
	"parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"}

// Setup builds the tracer provider the OTEL_* variables describe, with
// a batching OTLP exporter. It contacts nothing: the exporter connects
// when it first exports. A protocol or sampler it does not support is an
// error naming the variable.
func Setup(ctx context.Context, o Options) (*Provider, error) {
	if o.ServiceName == "" {
		return nil, errors.New("otlpexport: Options.ServiceName is required")
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	protocol, err := protocolOf(getenv)
	if err != nil {
		return nil, err
	}
	if s := getenv("OTEL_TRACES_SAMPLER"); s != "" {
		known := false
		for _, k := range samplers {
			known = known || s == k
		}
		if !known {
			return nil, fmt.Errorf("otlpexport: OTEL_TRACES_SAMPLER=%q: want one of %s", s, strings.Join(samplers, ", "))
		}
		if a := getenv("OTEL_TRACES_SAMPLER_ARG"); a != "" && strings.HasSuffix(s, "traceidratio") {
			if f, err := strconv.ParseFloat(a, 64); err != nil || f < 0 || f > 1 {
				return nil, fmt.Errorf("otlpexport: OTEL_TRACES_SAMPLER_ARG=%q: want a ratio between 0 and 1", a)
			}
		}
	}
	var exp sdktrace.SpanExporter
	switch protocol {
	case ProtocolGRPC:
		exp, err = otlptracegrpc.New(ctx)
	default:
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("otlpexport: OTLP exporter (%s): %w", protocol, err)
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", o.ServiceName)}
	if o.ServiceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", o.ServiceVersion))
	}
	// Later detectors win: the environment over the program's defaults.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("otlpexport: OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	routeSDKDiagnostics(log)
	flush := o.FlushTimeout
	if flush <= 0 {
		flush = DefaultFlushTimeout
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Provider{tp: tp, protocol: protocol, flush: flush}, nil
}

// protocolOf reads the OTLP protocol, the traces variable first.
func protocolOf(getenv func(string) string) (string, error) {
	for _, k := range [...]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		switch v := strings.TrimSpace(getenv(k)); v {
		case "":
			continue
		case ProtocolHTTP, ProtocolGRPC:
			return v, nil
		default:
			return "", fmt.Errorf("otlpexport: %s=%q: want %q or %q", k, v, ProtocolHTTP, ProtocolGRPC)
		}
	}
	return ProtocolHTTP, nil
}
