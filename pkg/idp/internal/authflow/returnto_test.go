package authflow

import (
	"net/url"
	"strings"
	"testing"
)

func TestSafeReturnTo(t *testing.T) {
	good := []string{
		"/", "/reports", "/reports?x=1&y=%2F", "/a/b#frag", "/caf%C3%A9", "/search?q=100%25", "/a:b", "/a..b/c.d",
	}
	bad := []string{
		"", "reports", "//evil.example", "///evil.example", "/\\evil.example", "\\\\evil.example",
		"https://evil.example", "http:/evil.example", "javascript:alert(1)", "/%2F%2Fevil.example",
		"/%2fevil.example", "/%5Cevil.example", "/%5cevil", "/%252F%252Fevil.example", "/%25252F%25252Fevil",
		"/a\\b", "/a\r\nSet-Cookie:x=1", "/a%0d%0aX:1", "/a\x00", "/%00", "/a\tb", "/\x7f",
		"/./", "/.//evil.example", "/a/../..//evil", "/%2E%2E/x", "/a%zz", "/" + strings.Repeat("a", 3000),
		"/\xff", " /a", "/%252525252F%252525252Fevil",
	}
	for _, s := range good {
		if got, ok := safeReturnTo(s); !ok || got != s {
			t.Errorf("safeReturnTo(%q) = %q, %v; want accepted", s, got, ok)
		}
	}
	for _, s := range bad {
		if got, ok := safeReturnTo(s); ok {
			t.Errorf("safeReturnTo(%q) = %q accepted; want refused", s, got)
		}
	}
}

// FuzzSafeReturnTo: whatever is accepted stays on this site once resolved
// against it, in every decoded form.
func FuzzSafeReturnTo(f *testing.F) {
	for _, s := range []string{"/", "/a?b=c", "//evil", "/\\evil", "/%2F%2Fevil", "/%5Cevil", "https://e", "/.//e", "/%252F/e"} {
		f.Add(s)
	}
	base, _ := url.Parse("https://app.example/auth/callback")
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := safeReturnTo(s)
		if !ok {
			return
		}
		if got != s {
			t.Fatalf("accepted value changed: %q -> %q", s, got)
		}
		cur := s
		for range 4 {
			if strings.HasPrefix(cur, "//") || strings.ContainsAny(cur, "\\\r\n\t\x00") || !strings.HasPrefix(cur, "/") {
				t.Fatalf("accepted %q has unsafe form %q", s, cur)
			}
			u, err := url.Parse(cur)
			if err == nil {
				if r := base.ResolveReference(u); r.Host != "app.example" || r.Scheme != "https" {
					t.Fatalf("accepted %q resolves to %s", s, r)
				}
			}
			dec, err := url.PathUnescape(cur)
			if err != nil || dec == cur {
				break
			}
			cur = dec
		}
	})
}

func BenchmarkSafeReturnTo(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := safeReturnTo("/reports/2026?year=2026&q=a%2Fb"); !ok {
			b.Fatal("refused")
		}
	}
}
