package boltstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/boltstore"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/storetest"
)

func open(t *testing.T, path string) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) shortener.Store {
		return open(t, filepath.Join(t.TempDir(), "links.db"))
	})
}

func TestCreatesParentDirAndReopens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "links.db")
	s := open(t, path)
	l := shortener.Link{Code: "persist", URL: "https://example.com/é", CreatedBy: "bob", CreatedAt: time.UnixMicro(1_700_000_000_123_456).UTC()}
	if err := s.Create(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("stat: %v, mode %v", err, fi.Mode())
	}
	s = open(t, path)
	defer s.Close()
	got, err := s.Get(t.Context(), "persist")
	if err != nil || got != l {
		t.Fatalf("after reopen: %+v, %v; want %+v", got, err, l)
	}
}

func TestSecondOpenFailsFast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "links.db")
	s := open(t, path)
	defer s.Close()
	start := time.Now()
	_, err := boltstore.Open(path, boltstore.Options{LockTimeout: 100 * time.Millisecond})
	if err == nil {
		t.Fatal("second Open of a locked file succeeded")
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("second Open took %v", time.Since(start))
	}
}

func TestCanceledContext(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "links.db"))
	defer s.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Create(ctx, shortener.Link{Code: "canceld", URL: "https://example.com/"}); err == nil {
		t.Fatal("Create with a canceled context succeeded")
	}
	if _, err := s.Get(t.Context(), "canceld"); err == nil {
		t.Fatal("link of a canceled Create was stored")
	}
}

func TestImport(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "links.db")
	s := open(t, path)
	links := []shortener.Link{
		{Code: "zzzzzzz", URL: "https://example.com/z", CreatedAt: time.UnixMicro(3).UTC()},
		{Code: "aaaaaaa", URL: "https://example.com/a?x=1&y", CreatedBy: "alice", CreatedAt: time.UnixMicro(1).UTC()},
		{Code: "mmmmmmm", URL: "https://example.com/m", CreatedAt: time.UnixMicro(2).UTC()},
	}
	if err := s.Import(ctx, links); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		links []shortener.Link
	}{
		{"code already stored", []shortener.Link{{Code: "bbbbbbb", URL: "https://b/"}, {Code: "mmmmmmm", URL: "https://other/"}}},
		{"code twice in the input", []shortener.Link{{Code: "ccccccc", URL: "https://c/"}, {Code: "ccccccc", URL: "https://c2/"}}},
	}
	for _, tc := range tests {
		if err := s.Import(ctx, tc.links); !errors.Is(err, shortener.ErrDuplicate) {
			t.Errorf("%s: Import = %v, want ErrDuplicate", tc.name, err)
		}
		// All or nothing: the other links of the call were not stored.
		if _, err := s.Get(ctx, tc.links[0].Code); !errors.Is(err, shortener.ErrNotFound) {
			t.Errorf("%s: Get(%s) = %v, want ErrNotFound", tc.name, tc.links[0].Code, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Import(ctx, links[:1]); !errors.Is(err, shortener.ErrClosed) {
		t.Fatalf("Import after Close = %v, want ErrClosed", err)
	}
	s = open(t, path)
	defer s.Close()
	for _, want := range links {
		if got, err := s.Get(ctx, want.Code); err != nil || got != want {
			t.Errorf("Get(%s) = %+v, %v; want %+v", want.Code, got, err, want)
		}
	}
	m, err := s.Get(ctx, "mmmmmmm")
	if err != nil || m.URL != "https://example.com/m" {
		t.Fatalf("a failed Import changed a stored link: %+v, %v", m, err)
	}
}
