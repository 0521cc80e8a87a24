package dpop

import "testing"

// RFC 3986 §6.2.2 (case, percent-encoding, dot segments) and §6.2.3
// (default port, empty path), and RFC 9449 §4.2 (no query, no fragment).
func TestNormalizeHTU_RFC3986_6_2(t *testing.T) {
	for in, want := range map[string]string{
		"https://api.example.com/orders":                "https://api.example.com/orders",
		"HTTPS://API.Example.COM/orders":                "https://api.example.com/orders",      // §6.2.2.1 case
		"https://api.example.com/Orders":                "https://api.example.com/Orders",      // the path keeps its case
		"https://api.example.com/a%2fb%c3%a9":           "https://api.example.com/a%2Fb%C3%A9", // §6.2.2.1 hex in upper case
		"https://api.example.com/%7Euser/%41%2D%5F":     "https://api.example.com/~user/A-_",   // §6.2.2.2 unreserved decoded
		"https://api.example.com/a/./b/../c":            "https://api.example.com/a/c",         // §6.2.2.3 dot segments
		"https://api.example.com/a/%2E%2E/c":            "https://api.example.com/c",           // decoded, then removed
		"https://api.example.com/../../a":               "https://api.example.com/a",
		"https://api.example.com/a/..":                  "https://api.example.com/",
		"https://api.example.com/a/.":                   "https://api.example.com/a/",
		"https://api.example.com/.well-known/x":         "https://api.example.com/.well-known/x",
		"https://api.example.com:443/x":                 "https://api.example.com/x", // §6.2.3 default port
		"http://api.example.com:80/x":                   "http://api.example.com/x",
		"http://api.example.com:/x":                     "http://api.example.com/x", // empty port
		"https://api.example.com:0443/x":                "https://api.example.com/x",
		"https://api.example.com:8443/x":                "https://api.example.com:8443/x",
		"http://api.example.com:443/x":                  "http://api.example.com:443/x",
		"https://api.example.com":                       "https://api.example.com/", // §6.2.3 empty path
		"https://api.example.com?q=1":                   "https://api.example.com/",
		"https://api.example.com/x?q=1#frag":            "https://api.example.com/x", // RFC 9449 §4.2
		"https://api.example.com/x#a?b":                 "https://api.example.com/x",
		"https://[2001:DB8::1]:443/x":                   "https://[2001:db8::1]/x",
		"https://[::1]:8443/x":                          "https://[::1]:8443/x",
		"https://api.example.com//double//slash":        "https://api.example.com//double//slash",
		"https://api.example.com/a;p=1/b:c@d!$&'()*+,=": "https://api.example.com/a;p=1/b:c@d!$&'()*+,=",
	} {
		got, err := NormalizeHTU(in)
		if err != nil || got != want {
			t.Errorf("NormalizeHTU(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// What is not an absolute http(s) URI, or not one spelt as RFC 3986
// allows, is an error rather than a guess.
func TestNormalizeHTU_Refusals(t *testing.T) {
	for _, in := range []string{
		"", "/orders", "api.example.com/orders", "//api.example.com/x", "ftp://api.example.com/x",
		"https:api.example.com/x", "https:///x", "https://:443/x", "https://user@api.example.com/x",
		"https://api.example.com:99999/x", "https://api.example.com:-1/x", "https://api.example.com:+80/x",
		"https://api.example.com:8a/x", "https://api.exa mple.com/x", "https://api.example.com/a b",
		"https://api.example.com/%zz", "https://api.example.com/%4", "https://api.example.com/é",
		"https://api.example.com/a\x00", "https://[::1/x", "https://[::1]x/y", "https://[fe80::1%25eth0]/x",
		"https://ap%69.example.com/x", "https://api.example.com/a\\b",
	} {
		if got, err := NormalizeHTU(in); err == nil {
			t.Errorf("NormalizeHTU(%q) = %q, want an error", in, got)
		}
	}
}
