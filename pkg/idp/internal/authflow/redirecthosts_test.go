package authflow

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

var testRedirectHosts = []string{"a.example.com", "*.apps.example.com", "c.example.com:8443", "d.example.com:*", "xn--e1afmkfd.example.com"}

func mustRedirectHosts(t testing.TB, entries ...string) *RedirectHosts {
	t.Helper()
	h, err := CompileRedirectHosts(entries)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestRedirectTarget(t *testing.T) {
	h := mustRedirectHosts(t, testRedirectHosts...)
	good := map[string]string{
		"https://a.example.com":                    "https://a.example.com/",
		"https://a.example.com/":                   "https://a.example.com/",
		"https://a.example.com/page?x=1&y=%2F":     "https://a.example.com/page?x=1&y=%2F",
		"https://a.example.com?x=1":                "https://a.example.com/?x=1",
		"HTTPS://A.Example.COM/Page":               "https://a.example.com/Page",
		"https://a.example.com:443/":               "https://a.example.com/",
		"http://a.example.com/":                    "http://a.example.com/",
		"http://a.example.com:80/p":                "http://a.example.com/p",
		"https://wiki.apps.example.com/":           "https://wiki.apps.example.com/",
		"https://x.y.apps.example.com/z":           "https://x.y.apps.example.com/z",
		"https://c.example.com:8443/":              "https://c.example.com:8443/",
		"https://d.example.com:9000/":              "https://d.example.com:9000/",
		"https://xn--e1afmkfd.example.com/":        "https://xn--e1afmkfd.example.com/",
		"https://xn--80ak6aa92e.apps.example.com/": "https://xn--80ak6aa92e.apps.example.com/",
	}
	bad := []string{
		"", "//evil.test", "///evil.test", "/\\evil.test", "\\\\evil.test", "https:evil.test", "https:/evil.test",
		"https:///evil.test", "https:\\\\evil.test", "https://\\evil.test", "https://evil.test",
		"https://a.example.com@evil.test/", "https://a.example.com:x@evil.test/", "https://user@a.example.com/",
		"https://evil.test#@a.example.com", "https://evil.test?@a.example.com", "https://evil.test\\@a.example.com",
		"https://evil.test/a.example.com", "https://a.example.com.evil.test/", "https://wiki.apps.example.com.evil.test/",
		"https://apps.example.com/", "https://.apps.example.com/", "https://a..example.com/", "https://a.example..com/",
		"https://a.example.com./", "https://wiki.apps.example.com./", "https://a%2eexample.com/", "https://a.example%2ecom/",
		"https://a.example.com%2f@evil.test/", "https://evil.test%2f.apps.example.com/", "https://%61.example.com/",
		"https://a.example.com:8443/", "https://a.example.com:0/", "https://a.example.com:/", "https://a.example.com:99999/",
		"https://a.example.com:0443/", "https://c.example.com/", "https://c.example.com:8444/", "https://a.example.com:evil.test/",
		"https://а.example.com/",                   // Cyrillic a
		"https://a.exampIe.com/",                   // capital i
		"https://a.example。com/",                   // ideographic full stop
		"https://a．example.com/",                   // fullwidth full stop
		"https://wiki.apps.example.com\u2025evil/", // two-dot leader
		"https://a.example.com/\r\nSet-Cookie:x=1", "https://a.example.com/%0d%0aX:1", "https://a.example.com\r\n/",
		"https://a.example.com/\\evil.test", "https://a.example.com\\evil.test", "https://a.example.com/a\\b",
		"https://a.example.com//evil.test", "https://a.example.com/%2F%2Fevil.test", "https://a.example.com/./x",
		"https://a.example.com/#frag", "https://a.example.com#x", "https://a.example.com/ x", " https://a.example.com/",
		"https://a.example.com/\t", "https://a.example.com/\x00",
		"javascript://a.example.com/%0aalert(1)", "javascript:alert(1)", "data:text/html,x", "ftp://a.example.com/",
		"file://a.example.com/etc/passwd", "ws://a.example.com/", "httpss://a.example.com/", "http//a.example.com/",
		"https://[::1]/", "https://127.0.0.1/", "https://a.example.com/" + strings.Repeat("a", 3000),
	}
	for in, want := range good {
		if got, ok := h.target(in, false); !ok || got != want {
			t.Errorf("target(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range bad {
		if got, ok := h.target(in, false); ok {
			t.Errorf("target(%q) = %q accepted; want refused", in, got)
		}
	}
	if got, ok := h.target("http://a.example.com/", true); ok {
		t.Errorf("target(http) with httpsOnly = %q accepted", got)
	}
	var none *RedirectHosts
	if got, ok := none.target("https://a.example.com/", false); ok {
		t.Errorf("no allowed hosts: %q accepted", got)
	}
}

func TestCompileRedirectHostsRefuses(t *testing.T) {
	bad := map[string]string{
		"":                        "empty",
		"https://a.example.com":   "not a URL",
		"a.example.com/path":      "not a URL",
		"user@a.example.com":      "not a URL",
		".example.com":            "leading dot",
		"*.com":                   "top-level domain",
		"*.co.uk":                 "public suffix",
		"*.github.io":             "public suffix",
		"*.test":                  "top-level domain",
		"a.example.com.":          "trailing dot",
		"*.example.com.":          "trailing dot",
		"a..example.com":          "empty label",
		"*example.com":            "first label",
		"a.*.example.com":         "first label",
		"*.*.example.com":         "first label",
		"a*.example.com":          "first label",
		"bücher.example.com":      "xn--",
		"a_b.example.com":         "letter, digit or hyphen",
		"-a.example.com":          "hyphen",
		"a.example.com:0":         "port",
		"a.example.com:65536":     "port",
		"a.example.com:":          "port",
		"a.example.com:https":     "port",
		"[::1]":                   "IPv6",
		"a.example.com%2e":        "letter, digit or hyphen",
		strings.Repeat("a", 64):   "63 bytes",
		"a.example.com:443:443":   "letter, digit or hyphen",
		"*.example.com evil.test": "letter, digit or hyphen",
	}
	for entry, want := range bad {
		_, err := CompileRedirectHosts([]string{entry})
		if err == nil || !errors.Is(err, errRedirectHost) || !strings.Contains(err.Error(), want) {
			t.Errorf("CompileRedirectHosts(%q) = %v; want an error naming %q", entry, err, want)
		}
	}
	if _, err := CompileRedirectHosts([]string{"A.Example.com", "*.example.com", "*.example.co.uk", "localhost:8080", "10.0.0.1"}); err != nil {
		t.Errorf("valid entries refused: %v", err)
	}
}

// FuzzRedirectTarget: whatever is accepted is an http(s) URL that the
// standard parser reads with an allowed host, no user info, and a path
// that stays on that host.
func FuzzRedirectTarget(f *testing.F) {
	for _, s := range []string{
		"https://a.example.com/", "https://wiki.apps.example.com/x?y=1", "https://a.example.com@evil.test/",
		"https:evil.test", "//evil.test", "https://a.example.com./", "https://a.example.com.evil.test/",
		"https://c.example.com:8443/", "https://a%2eexample.com/", "https://a.example.com\\@evil.test",
	} {
		f.Add(s)
	}
	h := mustRedirectHosts(f, testRedirectHosts...)
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := h.target(s, false)
		if !ok {
			return
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("accepted %q -> %q does not parse: %v", s, got, err)
		}
		if u.Scheme != "https" && u.Scheme != "http" || u.User != nil || u.Opaque != "" || u.Fragment != "" {
			t.Fatalf("accepted %q -> %s", s, u)
		}
		if !h.allows(u.Hostname(), u.Port()) {
			t.Fatalf("accepted %q -> host %q port %q not allowed", s, u.Hostname(), u.Port())
		}
		if strings.ContainsAny(got, "\\\r\n\t ") || !strings.HasPrefix(u.RequestURI(), "/") || strings.HasPrefix(u.EscapedPath(), "//") {
			t.Fatalf("accepted %q -> unsafe %q", s, got)
		}
		if again, ok := h.target(got, false); !ok || again != got {
			t.Fatalf("the accepted form %q is not stable: %q, %v", got, again, ok)
		}
	})
}

func BenchmarkRedirectTarget(b *testing.B) {
	h := mustRedirectHosts(b, testRedirectHosts...)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := h.target("https://wiki.apps.example.com/reports?year=2026", false); !ok {
			b.Fatal("refused")
		}
	}
}
