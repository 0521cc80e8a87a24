package shortener_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idp-proxy/idp-proxy/internal/pgtest"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/boltstore"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/memstore"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/pgstore"
)

// Benchmarks of the hot paths, per store, with a constant-302 handler as the
// baseline in the same run (DESIGN §7: redirects ≥ 0.9 of it):
//
//	go test -run '^$' -bench . -benchmem ./pkg/shortener/
//
// PostgreSQL sub-benchmarks run when TEST_POSTGRES_DSN is set, each in a
// fresh schema. Results are benchstat-comparable (use -count 10).

// benchLinks is the number of links preloaded for redirect benchmarks.
const benchLinks = 10_000

// discardWriter is a ResponseWriter that keeps only the header, so that the
// handler's own cost is measured.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }
func (w *discardWriter) reset()                      { clear(w.h); w.status = 0 }

// benchStore is a store factory for the benchmarks: open returns a new,
// empty store and a function that preloads links in bulk.
type benchStore struct {
	name string
	open func(b *testing.B) (shortener.Store, func([]shortener.Link))
}

func benchStores() []benchStore {
	return []benchStore{
		{name: "mem", open: func(b *testing.B) (shortener.Store, func([]shortener.Link)) {
			s := memstore.New()
			return s, func(links []shortener.Link) {
				for _, l := range links {
					if err := s.Create(b.Context(), l); err != nil {
						b.Fatal(err)
					}
				}
			}
		}},
		{name: "bolt", open: func(b *testing.B) (shortener.Store, func([]shortener.Link)) {
			s, err := boltstore.Open(filepath.Join(b.TempDir(), "links.db"), boltstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return s, func(links []shortener.Link) {
				if err := s.Import(b.Context(), links); err != nil {
					b.Fatal(err)
				}
			}
		}},
		{name: "pg", open: openPG},
	}
}

func openPG(b *testing.B) (shortener.Store, func([]shortener.Link)) {
	loadDSN, _ := pgtest.Schema(b, pgtest.DSN(b, "the PostgreSQL benchmarks"), "shortener_bench_")
	s, err := pgstore.Open(b.Context(), pgtest.WithParam(b, loadDSN, "pool_max_conns", "32"))
	if err != nil {
		b.Fatal(err)
	}
	return s, func(links []shortener.Link) { loadPG(b, loadDSN, links) }
}

// loadPG bulk-loads links with COPY.
func loadPG(b *testing.B, dsn string, links []shortener.Link) {
	ctx := b.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	_, err = conn.CopyFrom(ctx, pgx.Identifier{"shortener_links"}, []string{"code", "url", "created_by", "created_at"},
		pgx.CopyFromSlice(len(links), func(i int) ([]any, error) {
			l := links[i]
			return []any{l.Code, l.URL, l.CreatedBy, l.CreatedAt}, nil
		}))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "ANALYZE shortener_links"); err != nil {
		b.Fatal(err)
	}
}

// makeLinks returns n links with distinct 7-character base62 codes.
func makeLinks(n int) []shortener.Link {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	links := make([]shortener.Link, n)
	now := time.Now().UTC().Truncate(time.Microsecond)
	for i := range links {
		var c [7]byte
		v := i*7919 + 1_000_003 // spread the codes over the key space
		for j := range c {
			c[len(c)-1-j] = alphabet[v%62]
			v /= 62
		}
		links[i] = shortener.Link{Code: string(c[:]), URL: fmt.Sprintf("https://example.com/articles/%d?utm_source=bench", i), CreatedAt: now}
	}
	return links
}

func newBenchHandler(b *testing.B, s shortener.Store, cacheSize int) http.Handler {
	svc, err := shortener.New(s, shortener.Options{BaseURL: "https://sho.rt", CacheSize: cacheSize})
	if err != nil {
		b.Fatal(err)
	}
	return newHandler(b, svc, shortener.HandlerOptions{})
}

// constant302 is the baseline: the least a redirect handler can do, with
// the same headers as the shortener's redirect.
var constant302 = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h["Location"] = []string{"https://example.com/articles/1?utm_source=bench"}
	h["Cache-Control"] = []string{"private, max-age=0"}
	w.WriteHeader(http.StatusFound)
})

// redirectRequests returns one GET request per link.
func redirectRequests(links []shortener.Link) []*http.Request {
	reqs := make([]*http.Request, len(links))
	for i, l := range links {
		reqs[i] = httptest.NewRequest(http.MethodGet, "/"+l.Code, nil)
	}
	return reqs
}

func benchServe(b *testing.B, h http.Handler, reqs []*http.Request, want int) {
	b.Run("serial", func(b *testing.B) {
		w := &discardWriter{h: http.Header{}}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			w.reset()
			h.ServeHTTP(w, reqs[i%len(reqs)])
			i++
		}
		if w.status != want {
			b.Fatalf("status %d, want %d", w.status, want)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		var next atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			w := &discardWriter{h: http.Header{}}
			i := int(next.Add(1)) * 7
			ran := false
			for pb.Next() {
				w.reset()
				h.ServeHTTP(w, reqs[i%len(reqs)])
				i++
				ran = true
			}
			if ran && w.status != want {
				b.Errorf("status %d, want %d", w.status, want)
			}
		})
	})
}

func BenchmarkConstant302(b *testing.B) {
	benchServe(b, constant302, redirectRequests(makeLinks(benchLinks)), http.StatusFound)
}

func BenchmarkRedirect(b *testing.B) {
	links := makeLinks(benchLinks)
	reqs := redirectRequests(links)
	for _, bs := range benchStores() {
		b.Run(bs.name, func(b *testing.B) {
			s, load := bs.open(b)
			defer s.Close()
			load(links)
			benchServe(b, newBenchHandler(b, s, 0), reqs, http.StatusFound)
			// With the redirect cache of cmd/shortener (every link fits).
			b.Run("cached", func(b *testing.B) {
				benchServe(b, newBenchHandler(b, s, 100_000), reqs, http.StatusFound)
			})
		})
	}
}

// BenchmarkCreate measures POST /shorten end to end in the handler: body
// parsing, validation, code generation and a durable store write. The
// parallel variant runs 32 concurrent clients (DESIGN §7: ≥ 2,000 creates/s
// on bbolt) and reports creates/s.
func BenchmarkCreate(b *testing.B) {
	const body = `{"url":"https://example.com/articles/42?utm_source=bench&x=1"}`
	newReq := func() *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/shorten", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		return r
	}
	for _, bs := range benchStores() {
		b.Run(bs.name, func(b *testing.B) {
			s, _ := bs.open(b)
			defer s.Close()
			h := newBenchHandler(b, s, 0)
			b.Run("serial", func(b *testing.B) {
				w := &discardWriter{h: http.Header{}}
				b.ReportAllocs()
				for b.Loop() {
					w.reset()
					h.ServeHTTP(w, newReq())
					if w.status != http.StatusCreated {
						b.Fatalf("status %d", w.status)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
			})
			b.Run("parallel32", func(b *testing.B) {
				b.ReportAllocs()
				procs := runtime.GOMAXPROCS(0)
				b.SetParallelism((32 + procs - 1) / procs)
				b.RunParallel(func(pb *testing.PB) {
					w := &discardWriter{h: http.Header{}}
					for pb.Next() {
						w.reset()
						h.ServeHTTP(w, newReq())
						if w.status != http.StatusCreated {
							b.Errorf("status %d", w.status)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
			})
		})
	}
}

// BenchmarkStore measures the stores' Get (hit) and Create (one durable
// write, serial) directly.
func BenchmarkStore(b *testing.B) {
	links := makeLinks(benchLinks)
	for _, bs := range benchStores() {
		b.Run(bs.name, func(b *testing.B) {
			s, load := bs.open(b)
			defer s.Close()
			load(links)
			ctx := b.Context()
			b.Run("Get", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, err := s.Get(ctx, links[i%len(links)].Code); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
			b.Run("Put", func(b *testing.B) {
				b.ReportAllocs()
				l := shortener.Link{URL: "https://example.com/put", CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
				i := 0
				for b.Loop() {
					l.Code = fmt.Sprintf("P%07d", i)
					if err := s.Create(ctx, l); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		})
	}
}
