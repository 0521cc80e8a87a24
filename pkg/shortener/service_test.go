package shortener

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// fakeStore is a minimal map store (the real ones import this package).
type fakeStore struct {
	links   map[string]Link
	alwaysD bool
}

func (f *fakeStore) Create(_ context.Context, l Link) error {
	if _, ok := f.links[l.Code]; ok || f.alwaysD {
		return ErrDuplicate
	}
	f.links[l.Code] = l
	return nil
}

func (f *fakeStore) Get(_ context.Context, code string) (Link, error) {
	l, ok := f.links[code]
	if !ok {
		return Link{}, ErrNotFound
	}
	return l, nil
}
func (f *fakeStore) Ping(context.Context) error { return nil }
func (f *fakeStore) Close() error               { return nil }

// The link-management methods are not exercised through fakeStore.
func (f *fakeStore) List(context.Context, string, Cursor, int) ([]Link, error) { return nil, nil }
func (f *fakeStore) Delete(context.Context, string, string) error              { return ErrNotFound }
func (f *fakeStore) Visit(ctx context.Context, code string, _ time.Time) (Link, error) {
	return f.Get(ctx, code)
}
func (f *fakeStore) Edit(context.Context, string, string, LinkEdit) (Link, error) {
	return Link{}, ErrNotFound
}
func (f *fakeStore) WriteVisits(context.Context, VisitBatch) error { return nil }
func (f *fakeStore) PruneVisits(context.Context, time.Time) error  { return nil }
func (f *fakeStore) VisitStats(context.Context, string, StatsQuery) (VisitStats, error) {
	return VisitStats{}, nil
}

// repeatReader returns the same chunk forever.
type repeatReader struct{ chunk []byte }

func (r repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		n += copy(p[n:], r.chunk)
	}
	return n, nil
}

// chunk32 returns a 32-byte chunk (randomCode's read size) that starts with
// the base62 indexes of word.
func chunk32(word string) []byte {
	b := bytes.Repeat([]byte{0}, 32)
	for i := range len(word) {
		b[i] = byte(strings.IndexByte(base62, word[i]))
	}
	return b
}

func TestCodeGrowsOnCollision(t *testing.T) {
	st := &fakeStore{links: map[string]Link{}}
	s, err := New(st, Options{Rand: repeatReader{chunk32("AAAAAAAAAAAAAAAA")}})
	if err != nil {
		t.Fatal(err)
	}
	for want := 7; want <= 9; want++ {
		l, err := s.Shorten(t.Context(), "https://example.com/", "")
		if err != nil || len(l.Code) != want {
			t.Fatalf("code %q (%v), want length %d", l.Code, err, want)
		}
	}
}

func TestCodeSpaceExhausted(t *testing.T) {
	s, _ := New(&fakeStore{links: map[string]Link{}, alwaysD: true}, Options{})
	_, err := s.Shorten(t.Context(), "https://example.com/", "")
	if !errors.Is(err, ErrCodeSpaceExhausted) {
		t.Fatalf("err = %v", err)
	}
}

func TestNeverReserved(t *testing.T) {
	st := &fakeStore{links: map[string]Link{}}
	r := io.MultiReader(bytes.NewReader(chunk32("metrics")), bytes.NewReader(chunk32("shorten")), bytes.NewReader(chunk32("Healthz")), bytes.NewReader(chunk32("gooDone")))
	s, _ := New(st, Options{Rand: r})
	l, err := s.Shorten(t.Context(), "https://example.com/", "")
	if err != nil || l.Code != "gooDone" {
		t.Fatalf("code %q (%v), want gooDone", l.Code, err)
	}
	s2, _ := New(st, Options{Rand: bytes.NewReader(chunk32("mylinks")), Reserved: []string{"MyLinks"}})
	if _, err := s2.Shorten(t.Context(), "https://example.com/", ""); err == nil {
		t.Fatal("custom reserved word issued as a code")
	}
}

func TestRandomCodeAlphabetAndSpread(t *testing.T) {
	seen := map[byte]bool{}
	codes := map[string]bool{}
	for range 2000 {
		c, err := randomCode(rand.Reader, 7)
		if err != nil || len(c) != 7 || !isBase62(c) {
			t.Fatalf("code %q, %v", c, err)
		}
		if codes[c] {
			t.Fatalf("duplicate random code %q", c)
		}
		codes[c] = true
		for i := range len(c) {
			seen[c[i]] = true
		}
	}
	if len(seen) != 62 {
		t.Fatalf("%d distinct characters, want 62", len(seen))
	}
}

func TestValidCode(t *testing.T) {
	s, _ := New(&fakeStore{}, Options{})
	for code, want := range map[string]bool{
		"abcDEF1": true, "0000000": true, strings.Repeat("z", 16): true,
		"abcdef": false, strings.Repeat("z", 17): false, "abc-def": false, "abc+def": false,
		"shorten": false, "METRICS": false, "healthz": false, "": false, "abcdéf": false,
	} {
		if got := s.ValidCode(code); got != want {
			t.Errorf("ValidCode(%q) = %v, want %v", code, got, want)
		}
	}
}

func TestNewOptions(t *testing.T) {
	st := &fakeStore{}
	if _, err := New(nil, Options{}); err == nil {
		t.Error("nil store accepted")
	}
	for _, base := range []string{"example.com", "ftp://x/", "https://u@x/", "https://x/?q", "https://x/#f", "/rel"} {
		if _, err := New(st, Options{BaseURL: base}); err == nil {
			t.Errorf("base URL %q accepted", base)
		}
	}
	for _, n := range []int{-1, 5, 17} {
		if _, err := New(st, Options{CodeLength: n}); err == nil {
			t.Errorf("code length %d accepted", n)
		}
	}
	s, err := New(st, Options{BaseURL: "https://sho.rt/x/"})
	if err != nil || s.ShortURL("abc1234") != "https://sho.rt/x/abc1234" {
		t.Fatalf("ShortURL = %q, %v", s.ShortURL("abc1234"), err)
	}
	s, _ = New(st, Options{})
	if s.ShortURL("abc1234") != "/abc1234" {
		t.Fatalf("relative ShortURL = %q", s.ShortURL("abc1234"))
	}
}
