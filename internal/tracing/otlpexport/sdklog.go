package otlpexport

import (
	"context"
	"log/slog"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
)

// The OpenTelemetry SDK reports what goes wrong in the background (an
// export the collector refused or never answered, spans dropped from a
// full queue) through two process-wide channels: its error handler and
// its internal logr logger. Both write plain text to stderr unless set,
// outside the program's structured log. routeSDKDiagnostics sets both to
// log through log; the SDK has no per-provider setting, so the last Setup
// of a process decides.
func routeSDKDiagnostics(log *slog.Logger) {
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("tracing: the OpenTelemetry SDK reports an error; spans may be lost", "error", err)
	}))
	otel.SetLogger(logr.FromSlogHandler(sdkLevels{log.Handler()}))
}

// sdkLevels maps the levels of the SDK's logr messages, which arrive as
// slog.Level(-V), onto slog's: its warnings are V(1), its information
// V(4), its debugging V(8); errors arrive as slog.LevelError already.
type sdkLevels struct{ h slog.Handler }

func sdkLevel(l slog.Level) slog.Level {
	switch {
	case l >= slog.LevelInfo:
		return l
	case l >= -3:
		return slog.LevelWarn
	case l >= -7:
		return slog.LevelInfo
	default:
		return slog.LevelDebug
	}
}

func (s sdkLevels) Enabled(ctx context.Context, l slog.Level) bool {
	return s.h.Enabled(ctx, sdkLevel(l))
}

func (s sdkLevels) Handle(ctx context.Context, r slog.Record) error {
	r.Level = sdkLevel(r.Level)
	return s.h.Handle(ctx, r)
}

func (s sdkLevels) WithAttrs(attrs []slog.Attr) slog.Handler {
	return sdkLevels{s.h.WithAttrs(attrs)}
}

func (s sdkLevels) WithGroup(name string) slog.Handler { return sdkLevels{s.h.WithGroup(name)} }
