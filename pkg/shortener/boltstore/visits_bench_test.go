package boltstore_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/boltstore"
)

// BenchmarkRecordVisits writes batches of 1,000 visits to 10,000 links,
// each link visited perLink times in a batch (1: every visit of a batch
// to another link; a flush of a busy hot set has many visits per link),
// one second of visits per batch. For instruction counts per visit, run
// it under callgrind at two -test.benchtime counts (see
// bench/shortener_instr.sh) and divide the difference by 1,000 batches.
func BenchmarkRecordVisits(b *testing.B) {
	const nLinks, batchSize = 10_000, 1_000
	links := make([]shortener.Link, nLinks)
	for i := range links {
		links[i] = shortener.Link{Code: fmt.Sprintf("v%07d", i), URL: "https://example.com/", CreatedAt: time.Unix(1_700_000_000, 0).UTC()}
	}
	devices := []string{"desktop", "mobile", "tablet", "bot"}
	for _, perLink := range []int{1, 8} {
		b.Run(fmt.Sprintf("per-link-%d", perLink), func(b *testing.B) {
			ctx := b.Context()
			s, err := boltstore.Open(filepath.Join(b.TempDir(), "links.db"), boltstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if err := s.Import(ctx, links); err != nil {
				b.Fatal(err)
			}
			batch := make([]shortener.VisitEvent, batchSize)
			t0 := time.Date(2031, 3, 10, 0, 0, 0, 0, time.UTC)
			n := 0
			for b.Loop() {
				for i := range batch {
					k := n*batchSize + i
					batch[i] = shortener.VisitEvent{
						Code: links[(k/perLink)%nLinks].Code, At: t0.Add(time.Duration(n) * time.Second),
						ReferrerHost: "news.example", Device: devices[k%len(devices)], Browser: "firefox", Country: "DE", Bot: k%4 == 3,
					}
				}
				if err := s.WriteVisits(ctx, shortener.VisitBatch{Events: batch}); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*batchSize), "ns/visit")
		})
	}
}
