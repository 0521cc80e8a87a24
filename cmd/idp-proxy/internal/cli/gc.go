package cli

import (
	"log/slog"
	"runtime/debug"
)

// Garbage-collector defaults of `serve`, used unless GOGC or GOMEMLIMIT is
// set in the environment (then the Go runtime's own handling applies).
//
// The rule: a proxy's live heap is small and almost every allocation dies
// with its request, so collect less often than Go's default (GOGC=400
// instead of 100) and bound the heap with a soft memory limit sized from
// the verified-token cache, the one part of the live heap that grows with
// configuration: a fixed base (runtime, keys, rules, requests in flight)
// plus cacheEntryBudget per entry, about 1.5 times what an entry of a
// typical Keycloak token takes (pkg/idp TestCacheEntryFootprint). A full
// cache then fills only part of the headroom, so the live heap never sits
// at the limit (which would drive the collector back to back), and the
// default cache stays within DESIGN's 64 MB. The measurements behind it are
// in bench/README.md, "Garbage collector: GOGC and the memory limit".
const (
	defaultGCPercent = 400
	baseMemoryLimit  = 40 << 20
	cacheEntryBudget = 1280
)

// memoryLimit is the soft memory limit for a verified-token cache of
// cacheSize entries (0 or less: disabled).
func memoryLimit(cacheSize int) int64 {
	return baseMemoryLimit + int64(max(cacheSize, 0))*cacheEntryBudget
}

// tuneGC applies the defaults above, for a verified-token cache of
// cacheSize entries, unless the environment (getenv) sets GOGC or
// GOMEMLIMIT. It changes process-wide runtime settings: only the serve
// command calls it, once at start (a reload that changes the cache size
// keeps the limit of the start).
func tuneGC(getenv func(string) string, cacheSize int, log *slog.Logger) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		log.Info("garbage collector tuned by the environment", "GOGC", getenv("GOGC"), "GOMEMLIMIT", getenv("GOMEMLIMIT"))
		return
	}
	limit := memoryLimit(cacheSize)
	debug.SetGCPercent(defaultGCPercent)
	debug.SetMemoryLimit(limit)
	log.Info("garbage collector defaults for a sidecar (override with GOGC / GOMEMLIMIT)",
		"gc_percent", defaultGCPercent, "memory_limit_bytes", limit, "verified_cache_size", cacheSize)
}
