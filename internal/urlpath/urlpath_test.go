package urlpath

import "testing"

func TestUnder(t *testing.T) {
	for _, tc := range []struct {
		path, prefix string
		want         bool
	}{
		{"/auth", "/auth", true},
		{"/auth/", "/auth", true},
		{"/auth/login", "/auth", true},
		{"/authx", "/auth", false},
		{"/aut", "/auth", false},
		{"/", "/auth", false},
		{"", "/auth", false},
		{"/a/b/c", "/a/b", true},
		{"/a/bc", "/a/b", false},
	} {
		if got := Under(tc.path, tc.prefix); got != tc.want {
			t.Errorf("Under(%q, %q) = %v, want %v", tc.path, tc.prefix, got, tc.want)
		}
	}
}
