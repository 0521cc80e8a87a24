package cli

import (
	"log/slog"
	"runtime/debug"
)

// Garbage-collector defaults of `serve`, used unless GOGC or GOMEMLIMIT is
// set in the environment (then the Go runtime's own handling applies).
//
// A proxy's live heap is small (keys, rules, the verified-token cache) and
// almost every allocation dies with its request, so Go's default GOGC=100
// collects very often; those collections showed up as the proxy's tail
// latency in bench/ (open-loop load at 1,000 requests/s: p99 +1.6 ms over
// a bare ReverseProxy with GOGC=100, within noise with these defaults).
// GOGC=400 trades a larger heap for fewer collections, and the soft memory
// limit keeps the process near the sidecar budget of DESIGN §7 (peak RSS
// ≤ 64 MiB under load). If the live heap itself grows past the limit (a
// very large VerifiedCacheSize), set GOMEMLIMIT to the container's limit.
const (
	defaultGCPercent   = 400
	defaultMemoryLimit = 64 << 20
)

// tuneGC applies the defaults above unless the environment (getenv) sets
// GOGC or GOMEMLIMIT. It changes process-wide runtime settings: only the
// serve command calls it.
func tuneGC(getenv func(string) string, log *slog.Logger) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		log.Info("garbage collector tuned by the environment", "GOGC", getenv("GOGC"), "GOMEMLIMIT", getenv("GOMEMLIMIT"))
		return
	}
	debug.SetGCPercent(defaultGCPercent)
	debug.SetMemoryLimit(defaultMemoryLimit)
	log.Info("garbage collector defaults for a sidecar (override with GOGC / GOMEMLIMIT)",
		"gc_percent", defaultGCPercent, "memory_limit_bytes", defaultMemoryLimit)
}
