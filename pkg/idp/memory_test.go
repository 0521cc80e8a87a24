package idp_test

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// BenchmarkDistinctTokens verifies more distinct tokens, in turn, than the
// verified-token cache holds (a large user population: nearly every
// verify is a miss), with a full default-sized cache, under the memory
// settings of idp-proxy serve for that cache (GOGC=400, 40 MiB + 1.25 KiB
// an entry soft limit, as cmd/idp-proxy/internal/cli/gc.go sets them). It
// reports the garbage collections per 1,000 verifies, which a cache of
// decoded identities used to drive up.
func BenchmarkDistinctTokens(b *testing.B) {
	srv := idptest.NewServer(b, idptest.Options{})
	const cacheSize = idp.DefaultVerifiedCacheSize
	distinct := cacheSize + cacheSize/5
	toks := make([]string, distinct)
	for i := range toks {
		c := srv.UserClaims(clientID, "user", "creator", "reader")
		c["jti"] = fmt.Sprintf("jti-%d", i)
		toks[i] = srv.Mint(c)
	}
	p := newPlugin(b, srv, nil)
	ctx := b.Context()
	for _, tok := range toks {
		if _, err := p.Verify(ctx, tok); err != nil {
			b.Fatal(err)
		}
	}
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(40<<20 + cacheSize*1280))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if _, err := p.Verify(ctx, toks[i%distinct]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.NumGC-before.NumGC)*1000/float64(b.N), "GCs/1000")
	b.ReportMetric(float64(before.HeapAlloc)/(1<<20), "live-MiB")
}

// TestCacheEntryFootprint measures the heap a full cache retains, in
// bytes and in heap objects (what a garbage collection has to mark): an
// entry keeps the verified payload, not the decoded identity. The bounds
// include the hot table's share (at most 256 tokens with their
// identities, spread over the n entries).
func TestCacheEntryFootprint(t *testing.T) {
	if testing.Short() {
		t.Skip("mints thousands of tokens")
	}
	srv := idptest.NewServer(t, idptest.Options{})
	const n = 4000
	toks := make([]string, n)
	for i := range toks {
		c := srv.UserClaims(clientID, fmt.Sprintf("user%d", i), "creator", "reader")
		c["jti"] = fmt.Sprintf("jti-%d", i)
		toks[i] = srv.Mint(c)
	}
	heap := func() (bytes, objects uint64) {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc, m.HeapObjects
	}
	p := newPlugin(t, srv, func(c *idp.Config) { c.VerifiedCacheSize = n })
	baseBytes, baseObjects := heap()
	for _, tok := range toks {
		if _, err := p.Verify(t.Context(), tok); err != nil {
			t.Fatal(err)
		}
	}
	b, o := heap()
	perBytes, perObjects := float64(b-baseBytes)/n, float64(o-baseObjects)/n
	t.Logf("retained heap per cached token (%d bytes each): %.0f bytes, %.1f objects", len(toks[0]), perBytes, perObjects)
	if perBytes > 1536 {
		t.Errorf("a cached token retains %.0f bytes, want at most 1.5 KiB", perBytes)
	}
	if perObjects > 4 {
		t.Errorf("a cached token retains %.1f heap objects, want at most 4", perObjects)
	}
	runtime.KeepAlive(p)
}
