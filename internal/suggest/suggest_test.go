package suggest

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"store", "store-timeout", "listen", "base-url", "cache-ttl"}
	for _, tc := range []struct{ in, want string }{
		{"stor", "store"},
		{"STORE", "store"},
		{"stroe", "store"},
		{"store-timout", "store-timeout"},
		{"baseurl", "base-url"},
		{"cache_ttl", "cache-ttl"},
		{"postgres-dsn", ""},
		{"x", ""},
		{"", ""},
	} {
		if got := Closest(tc.in, names); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "abc", 0}, {"", "abc", 3}, {"abc", "acb", 1}, {"kitten", "sitting", 3}} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
