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
		tuneGC(env(set), 10000, log)
		if got := debug.SetGCPercent(100); got != 100 {
			t.Errorf("%v: GC percent changed to %d; the environment must win", set, got)
		}
	}
	for _, c := range []struct {
		cacheSize int
		wantMiB   float64
	}{
		{10000, 40 + 10000*1.25/1024}, // the default cache: about 52 MiB
		{0, 40},                       // cache disabled
		{100000, 40 + 100000*1.25/1024},
	} {
		tuneGC(env(nil), c.cacheSize, log)
		if got := debug.SetGCPercent(100); got != defaultGCPercent {
			t.Errorf("cache %d: GC percent = %d, want %d", c.cacheSize, got, defaultGCPercent)
		}
		if got := float64(debug.SetMemoryLimit(-1)) / (1 << 20); got != c.wantMiB {
			t.Errorf("cache %d: memory limit = %.2f MiB, want %.2f MiB", c.cacheSize, got, c.wantMiB)
		}
	}
}
