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
// latency in bench/. GOGC=400 trades a larger heap for fewer collections,
// and a soft memory limit keeps the process near a sidecar's budget.
//
// The limit is sized from the verified-token cache, the one part of the
// live heap that grows with configuration: a fixed 40 MiB (runtime, keys,
// rules, requests in flight) plus cacheEntryBudget per cache entry, about
// 1.5 times what an entry of a typical Keycloak token takes (under 1 KiB:
// the verified payload only, pkg/idp TestCacheEntryFootprint). A full
// cache therefore fills a small part of the headroom above the fixed
// part, and the collector is never driven to run back to back because the
// live heap sits at the limit (the GC thrash of a fixed 64 MiB limit under
// a 10,000-token cache of decoded identities with many distinct tokens:
// 9–11 collections per 1,000 requests). The cache's entries hold no
// pointers, so they add little to each collection's work either.
// Default cache (10,000): 40 + 12.2 = 52.2 MiB, which keeps the proxy's
// resident memory under load within DESIGN's 64 MB.
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
