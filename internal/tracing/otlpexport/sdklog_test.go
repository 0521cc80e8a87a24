package otlpexport

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

// The SDK's logr levels land on slog's: V(1) warnings at WARN, V(4)
// information at INFO, V(8) debugging at DEBUG, errors at ERROR.
func TestSDKLevels(t *testing.T) {
	var b strings.Builder
	l := logr.FromSlogHandler(sdkLevels{slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelInfo})})
	l.V(1).Info("warned")
	l.V(4).Info("informed")
	l.V(8).Info("debugged")
	l.Error(nil, "failed")
	out := b.String()
	for _, want := range []string{"level=WARN msg=warned", "level=INFO msg=informed", "level=ERROR msg=failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "debugged") {
		t.Errorf("a V(8) message passed an INFO handler:\n%s", out)
	}
}
