package proxy

import (
	"net/url"
	"path"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheckPath(t *testing.T) {
	tests := []struct {
		path string
		ok   bool
	}{
		{"/", true},
		{"/health", true},
		{"/abc123", true},
		{"/admin/", true},
		{"/a/b/c/", true},
		{"/caf%C3%A9", true},
		{"/a%20b", true},
		{"/a%3Fb", true},           // encoded '?' is data
		{"/%61dmin", true},         // encoded letter
		{"/...", true},             // three dots is a name
		{"/.well-known/x", true},   // dot-prefixed name
		{"/a.b/c..d", true},        // dots inside names
		{"/x-y_z~", true},          // unreserved
		{"/a:b@c!$&'()*+,=", true}, // sub-delims in segments
		{"", false},
		{"*", false},
		{"admin", false},
		{"//", false},
		{"//admin", false},
		{"/admin//users", false},
		{"/.", false},
		{"/./admin", false},
		{"/..", false},
		{"/../admin", false},
		{"/public/../admin", false},
		{"/public/..", false},
		{"/%2e/admin", false},
		{"/%2E%2e/admin", false},
		{"/.%2e/admin", false},
		{"/public/%2e%2e/admin", false},
		{"/admin%2Fusers", false},
		{"/admin%2fusers", false},
		{"/admin%5Cusers", false},
		{"/admin\\users", false},
		{"/admin;jsessionid=1", false},
		{"/admin%3Bx", false},
		{"/admin%252F", false},
		{"/a%00", false},
		{"/a%0D%0Ab", false},
		{"/a%09", false},
		{"/a%7F", false},
		{"/a\x00", false},
		{"/a\r\nb", false},
		{"/a\tb", false},
		{"/caf\xc3\xa9", false},
		{"/a%", false},
		{"/a%4", false},
		{"/a%zz", false},
		{"/a%4g", false},
		{"/%F0%9F%98%80/x", true},      // a 4-byte UTF-8 sequence
		{"/%C0%AE%C0%AE/admin", false}, // overlong '.' ('..' to lax decoders)
		{"/admin%C0%AFusers", false},   // overlong '/'
		{"/%E0%80%AE", false},          // 3-byte overlong '.'
		{"/caf%E9", false},             // Latin-1, not UTF-8
		{"/%ED%A0%80", false},          // UTF-16 surrogate
		{"/%C3", false},                // truncated sequence
	}
	for _, tt := range tests {
		reason := checkPath(tt.path)
		if (reason == "") != tt.ok {
			t.Errorf("checkPath(%q) = %q, want ok=%v", tt.path, reason, tt.ok)
		}
	}
}

// checkPathInvariants states what an accepted path guarantees; the fuzz
// test and the table share it.
func checkPathInvariants(t *testing.T, p string) {
	t.Helper()
	if checkPath(p) != "" {
		return
	}
	dec, err := url.PathUnescape(p)
	if err != nil {
		t.Fatalf("accepted %q but it does not decode: %v", p, err)
	}
	if strings.Count(dec, "/") != strings.Count(p, "/") {
		t.Fatalf("accepted %q whose decoded form %q has other segments", p, dec)
	}
	clean := path.Clean(dec)
	if strings.HasSuffix(dec, "/") && clean != "/" {
		clean += "/"
	}
	if clean != dec {
		t.Fatalf("accepted %q whose decoded form %q is not clean (%q)", p, dec, clean)
	}
	if !utf8.ValidString(dec) {
		t.Fatalf("accepted %q whose decoded form %q is not UTF-8", p, dec)
	}
	for i := 0; i < len(dec); i++ {
		if c := dec[i]; c < 0x20 || c == 0x7f || c == '\\' || c == ';' {
			t.Fatalf("accepted %q whose decoded form holds %q", p, c)
		}
	}
	if strings.Contains(dec, "%") && strings.ContainsAny(dec[strings.Index(dec, "%"):], "0123456789abcdefABCDEF") {
		if _, err := url.PathUnescape(dec); err == nil && strings.Contains(p, "%25") {
			t.Fatalf("accepted %q which decodes twice", p)
		}
	}
}

func TestCheckPathInvariantsOnTable(t *testing.T) {
	for _, p := range []string{"/", "/a/b/", "/caf%C3%A9", "/%2e%2e", "/a%2Fb", "/%252e"} {
		checkPathInvariants(t, p)
	}
}
