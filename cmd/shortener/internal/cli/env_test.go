package cli

import (
	"strings"
	"testing"
)

// A SHORTENER_ variable that names no flag stops the start, naming the
// variable it probably meant: SHORTENER_STOR=memory: must not run on the
// bbolt file.
func TestUnknownEnvironmentVariableRefused(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"SHORTENER_STOR", "did you mean SHORTENER_STORE?"},
		{"SHORTENER_CACHE_TLL", "did you mean SHORTENER_CACHE_TTL?"},
		{"shortener_store", "did you mean SHORTENER_STORE?"},
		{"SHORTENER_POSTGRES_DSN", "SHORTENER_STORE for --store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tc.name, "memory:")
			_, err := capture(t)
			if err == nil || !strings.Contains(err.Error(), "unknown environment variable "+tc.name) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s=memory: gave %v; want an error naming it with %q", tc.name, err, tc.want)
			}
		})
	}
	// Every flag's own variable is known, --help's and --version's are not settings.
	t.Setenv("SHORTENER_STORE_TIMEOUT", "2s")
	t.Setenv("SHORTENER_CACHE_STALE_IF_ERROR", "0s")
	if _, err := capture(t); err != nil {
		t.Fatalf("known variables refused: %v", err)
	}
}

// A misspelt flag is refused with the flag it probably meant.
func TestMisspeltFlagSuggestsTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--stor", "memory:"}, "did you mean --store?"},
		{[]string{"--stor=memory:"}, "did you mean --store?"},
		{[]string{"--cache-tll", "5s"}, "did you mean --cache-ttl?"},
		{[]string{"--base_url", "https://sho.rt"}, "did you mean --base-url?"},
	} {
		_, err := capture(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), "unknown flag") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v gave %v; want %q", tc.args, err, tc.want)
		}
	}
	if _, err := capture(t, "--no-such-thing"); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("--no-such-thing gave %v; want an unknown flag error without a guess", err)
	}
}
