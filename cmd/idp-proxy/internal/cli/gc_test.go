package cli

import (
	"log/slog"
	"runtime/debug"
	"testing"
)

// TestTuneGC: the sidecar defaults apply only when the environment sets
// neither GOGC nor GOMEMLIMIT. Not parallel: it changes the process's
// runtime settings and restores them.
func TestTuneGC(t *testing.T) {
	prevPercent := debug.SetGCPercent(100)
	prevLimit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
	})
	log := slog.New(slog.DiscardHandler)
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	for _, set := range []map[string]string{{"GOGC": "50"}, {"GOMEMLIMIT": "1GiB"}} {
		debug.SetGCPercent(100)
		tuneGC(env(set), log)
		if got := debug.SetGCPercent(100); got != 100 {
			t.Errorf("%v: GC percent changed to %d; the environment must win", set, got)
		}
	}
	tuneGC(env(nil), log)
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Errorf("GC percent = %d, want %d", got, defaultGCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != defaultMemoryLimit {
		t.Errorf("memory limit = %d, want %d", got, defaultMemoryLimit)
	}
}
