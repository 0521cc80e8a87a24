// Package storetest is the conformance suite of shortener.Store: every
// backend runs it from its own tests.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) shortener.Store { return openMyStore(t) })
//	}
package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// Run runs the conformance suite. newStore must return a new, empty store
// for each call; Run closes every store it gets (Close must be idempotent).
// Subtests run in parallel.
func Run(t *testing.T, newStore func(t *testing.T) shortener.Store) {
	t.Helper()
	open := func(t *testing.T) shortener.Store {
		t.Helper()
		s := newStore(t)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, s shortener.Store)
	}{
		{"CreateGet", testCreateGet},
		{"Duplicate", testDuplicate},
		{"NotFound", testNotFound},
		{"ByteExactURLs", testByteExact},
		{"ConcurrentCreates", testConcurrentCreates},
		{"ConcurrentSameCode", testConcurrentSameCode},
		{"Ping", testPing},
		{"Close", testClose},
		{"ExpiryAndLimits", testExpiryAndLimits},
		{"ListOrderAndPages", testListOrderAndPages},
		{"ListTies", testListTies},
		{"Delete", testDelete},
		{"Visit", testVisit},
		{"ConcurrentVisitLimit", testConcurrentVisitLimit},
		{"WriteVisitCounts", testWriteVisitCounts},
		{"ClosedLinkMethods", testClosedLinkMethods},
		{"Edit", testEdit},
		{"EditOverLimit", testEditOverLimit},
		{"ConcurrentEditAndVisits", testConcurrentEditAndVisits},
		{"VisitStats", testVisitStats},
		{"VisitStatsBusyBatch", testVisitStatsBusyBatch},
		{"VisitStatsCounted", testVisitStatsCounted},
		{"WriteVisitsCountsAndEvents", testWriteVisitsCountsAndEvents},
		{"GetRedirect", testGetRedirect},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

// at returns a fixed creation time with microsecond precision.
func at(sec int64) time.Time { return time.Unix(1_700_000_000+sec, 123456000).UTC() }

func mustCreate(t *testing.T, s shortener.Store, l shortener.Link) {
	t.Helper()
	if err := s.Create(context.Background(), l); err != nil {
		t.Fatalf("Create(%q): %v", l.Code, err)
	}
}

func mustGet(t *testing.T, s shortener.Store, want shortener.Link) {
	t.Helper()
	got, err := s.Get(context.Background(), want.Code)
	if err != nil {
		t.Fatalf("Get(%q): %v", want.Code, err)
	}
	if got.Code != want.Code || got.URL != want.URL || got.CreatedBy != want.CreatedBy || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Fatalf("Get(%q) = %+v, want %+v", want.Code, got, want)
	}
}

func testCreateGet(t *testing.T, s shortener.Store) {
	links := []shortener.Link{
		{Code: "abcDEF1", URL: "https://example.com/", CreatedBy: "alice", CreatedAt: at(1)},
		{Code: "abcDEF2", URL: "http://example.org/path?q=1&r=2#frag", CreatedAt: at(2)},
		{Code: "0123456789AZaz", URL: "https://example.net", CreatedBy: "svc-reporter", CreatedAt: at(3)},
	}
	for _, l := range links {
		mustCreate(t, s, l)
	}
	for _, l := range links {
		mustGet(t, s, l)
	}
	// Codes are case-sensitive.
	if _, err := s.Get(context.Background(), "ABCdef1"); !errors.Is(err, shortener.ErrNotFound) {
		t.Fatalf("Get(other case) error = %v, want ErrNotFound", err)
	}
}

func testDuplicate(t *testing.T, s shortener.Store) {
	orig := shortener.Link{Code: "dupCode", URL: "https://example.com/original", CreatedBy: "alice", CreatedAt: at(1)}
	mustCreate(t, s, orig)
	err := s.Create(context.Background(), shortener.Link{Code: "dupCode", URL: "https://evil.example/", CreatedBy: "mallory", CreatedAt: at(2)})
	if !errors.Is(err, shortener.ErrDuplicate) {
		t.Fatalf("second Create error = %v, want ErrDuplicate", err)
	}
	if !errors.Is(err, shortener.ErrCodeTaken) {
		t.Fatalf("ErrCodeTaken does not match %v", err)
	}
	mustGet(t, s, orig)
}

func testNotFound(t *testing.T, s shortener.Store) {
	for _, code := range []string{"missing", "nope123", "x"} {
		_, err := s.Get(context.Background(), code)
		if !errors.Is(err, shortener.ErrNotFound) {
			t.Fatalf("Get(%q) error = %v, want ErrNotFound", code, err)
		}
	}
}

func testByteExact(t *testing.T, s shortener.Store) {
	long := "https://example.com/" + strings.Repeat("a1/", (shortener.MaxURLLength-21)/3)
	urls := []string{
		"https://例え.テスト/パス?クエリ=値#断片",
		"https://example.com/%E2%82%AC?x=%2F%2f&y=+ &z=%zz", // not normalised, stored as is
		"HTTPS://Example.COM:443/./a/../b//c?",
		"https://example.com/emoji/😀?q=\u00e9&r=e\u0301",
		"http://[2001:db8::1]:8080/x",
		long,
	}
	for i, u := range urls {
		mustCreate(t, s, shortener.Link{Code: fmt.Sprintf("exact%02d", i), URL: u, CreatedAt: at(int64(i))})
	}
	for i, u := range urls {
		mustGet(t, s, shortener.Link{Code: fmt.Sprintf("exact%02d", i), URL: u, CreatedAt: at(int64(i))})
	}
}

func testConcurrentCreates(t *testing.T, s shortener.Store) {
	const workers, each = 16, 20
	var wg sync.WaitGroup
	errc := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				l := shortener.Link{Code: fmt.Sprintf("cc%02dx%03d", w, i), URL: fmt.Sprintf("https://example.com/%d/%d", w, i), CreatedAt: at(int64(i))}
				if err := s.Create(context.Background(), l); err != nil {
					errc <- err
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatalf("concurrent Create: %v", err)
	}
	for w := range workers {
		for i := range each {
			mustGet(t, s, shortener.Link{Code: fmt.Sprintf("cc%02dx%03d", w, i), URL: fmt.Sprintf("https://example.com/%d/%d", w, i), CreatedAt: at(int64(i))})
		}
	}
}

func testConcurrentSameCode(t *testing.T, s shortener.Store) {
	const workers = 16
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []int
	)
	for w := range workers {
		wg.Go(func() {
			err := s.Create(context.Background(), shortener.Link{Code: "raceCode", URL: fmt.Sprintf("https://example.com/%d", w), CreatedAt: at(1)})
			switch {
			case err == nil:
				mu.Lock()
				winners = append(winners, w)
				mu.Unlock()
			case !errors.Is(err, shortener.ErrDuplicate):
				t.Errorf("Create: %v, want nil or ErrDuplicate", err)
			}
		})
	}
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("%d creates of one code succeeded, want exactly 1", len(winners))
	}
	mustGet(t, s, shortener.Link{Code: "raceCode", URL: fmt.Sprintf("https://example.com/%d", winners[0]), CreatedAt: at(1)})
}

func testPing(t *testing.T, s shortener.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func testClose(t *testing.T, s shortener.Store) {
	mustCreate(t, s, shortener.Link{Code: "closeMe", URL: "https://example.com/", CreatedAt: at(1)})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Ping(context.Background()); err == nil {
		t.Fatal("Ping after Close = nil, want an error")
	}
	if err := s.Create(context.Background(), shortener.Link{Code: "closed2", URL: "https://example.com/", CreatedAt: at(1)}); err == nil {
		t.Fatal("Create after Close = nil, want an error")
	}
}
