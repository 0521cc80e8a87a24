package shortener

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValidateURL(t *testing.T) {
	long := "https://example.com/" + strings.Repeat("a", MaxURLLength-len("https://example.com/"))
	tests := []struct {
		url    string
		reason string // "" = valid
	}{
		{"https://example.com", ""},
		{"http://example.com/a/b?c=d&e=f#g", ""},
		{"HTTPS://EXAMPLE.COM/", ""},
		{"https://例え.テスト/パス", ""},
		{"https://example.com:8443/x", ""},
		{"http://[2001:db8::1]/", ""},
		{"http://127.0.0.1:8000/abc", ""},
		{"https://example.com/%20encoded%E2%82%AC", ""},
		{long, ""},
		{long + "b", "longer than 2048"},
		{"", "empty"},
		{"example.com", "absolute"},
		{"/relative/path", "absolute"},
		{"//example.com/x", "absolute"},
		{"javascript:alert(1)", "scheme"},
		{"JaVaScRiPt:alert(1)", "scheme"},
		{"data:text/html,<script>alert(1)</script>", "scheme"},
		{"file:///etc/passwd", "scheme"},
		{"ftp://example.com/", "scheme"},
		{"mailto:a@example.com", "scheme"},
		{"http:example.com", "form"},
		{"http://", "host"},
		{"http:///path", "host"},
		{"http://:80/", "host"},
		{"https://user:pass@example.com/", "user information"},
		{"https://user@example.com/", "user information"},
		{"https://example.com/a b", "whitespace"},
		{" https://example.com/", "whitespace"},
		{"https://example.com/\t", "whitespace"},
		{"https://example.com/\n", "whitespace"},
		{"https://example.com/\r\nSet-Cookie:x", "whitespace"},
		{"https://example.com/\x00", "whitespace"},
		{"https://example.com/\x7f", "whitespace"},
		{"https://example.com/\u0085", "whitespace"},
		{"https://example.com/\u00a0", "whitespace"},
		{"https://example.com/\u2028", "whitespace"},
		{"https://example.com/\u202egnp.exe", "whitespace"},
		{"https://exa\u200bmple.com/", "whitespace"},
		{"https://example.com/\xff", "UTF-8"},
		{"https://evil.com\\@good.com/", "backslash"},
		{"https://example.com:port/", "parsed"},
		{"https://exa%zzmple.com/", "parsed"},
	}
	for _, tc := range tests {
		err := ValidateURL(tc.url)
		if tc.reason == "" {
			if err != nil {
				t.Errorf("ValidateURL(%q) = %v, want nil", tc.url, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalidURL) {
			t.Errorf("ValidateURL(%q) = %v, want ErrInvalidURL", tc.url, err)
			continue
		}
		var ie *InvalidURLError
		if !errors.As(err, &ie) || !strings.Contains(ie.Reason, tc.reason) {
			t.Errorf("ValidateURL(%q) reason = %q, want it to mention %q", tc.url, err, tc.reason)
		}
	}
}

// FuzzValidateURL checks that accepted URLs always honour the rules, and
// that validation never panics.
func FuzzValidateURL(f *testing.F) {
	for _, s := range []string{"https://example.com/", "javascript:alert(1)", "http://u@h/", "https://例え.テスト/", "http://[::1]:80/", "https://Bücher.example:8443/ü?q=ä#f", "https://\u05d0a.com/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if ValidateURL(raw) != nil {
			return
		}
		if len(raw) > MaxURLLength || !utf8.ValidString(raw) {
			t.Fatalf("accepted %q: too long or invalid UTF-8", raw)
		}
		if strings.ContainsAny(raw, " \t\r\n\x00\x7f\\") {
			t.Fatalf("accepted %q with whitespace, control or backslash", raw)
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("accepted unparsable %q: %v", raw, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.Opaque != "" {
			t.Fatalf("accepted %q: scheme %q host %q user %v opaque %q", raw, u.Scheme, u.Host, u.User, u.Opaque)
		}
		if !strings.HasPrefix(strings.ToLower(raw), "http://") && !strings.HasPrefix(strings.ToLower(raw), "https://") {
			t.Fatalf("accepted %q that does not start with http(s)://", raw)
		}
		// What is stored and answered in Location is ASCII, parses, and
		// keeps the scheme; an ASCII URL is kept byte for byte.
		norm, err := NormalizeURL(raw)
		if err != nil {
			t.Fatalf("%q validated but does not normalise: %v", raw, err)
		}
		for i := 0; i < len(norm); i++ {
			if norm[i] >= utf8.RuneSelf {
				t.Fatalf("%q normalised to %q: not ASCII", raw, norm)
			}
		}
		if isASCII(raw) && norm != raw {
			t.Fatalf("ASCII URL %q rewritten to %q", raw, norm)
		}
		if nu, err := url.Parse(norm); err != nil || nu.Hostname() == "" || !strings.EqualFold(nu.Scheme, u.Scheme) {
			t.Fatalf("%q normalised to %q, which does not parse as the same kind of URL (%v)", raw, norm, err)
		}
	})
}
