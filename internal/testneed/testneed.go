// Package testneed skips a test whose environment lacks what it needs (a
// PostgreSQL, a Redis, the end-to-end tools), or fails it where that is
// required (CI), and records each skip in the file $IDP_TEST_SKIPS names:
// `go test` still says "ok" for a package whose every test skipped, so
// `make test` reads the file to say at the end of the run what did not
// run and what to set (scripts/gotest.sh).
package testneed

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// SkipsEnv names the file skips are appended to; unset, nothing is
// recorded.
const SkipsEnv = "IDP_TEST_SKIPS"

// A Need is what a test needs from its environment, as the end-of-run line
// names it.
type Need struct {
	// Name is what to set or install, e.g. "TEST_POSTGRES_DSN".
	Name string
	// Hint says how, e.g. "TEST_POSTGRES_DSN=postgres://...".
	Hint string
	// Require names the variable that turns the skip into a failure
	// ("" for none).
	Require string
}

// The needs of this repository's suites.
var (
	Postgres = Need{"TEST_POSTGRES_DSN", "TEST_POSTGRES_DSN=postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "IDP_REQUIRE_POSTGRES"}
	Redis    = Need{"TEST_REDIS_URL", "TEST_REDIS_URL=redis://127.0.0.1:6379/0", "IDP_REQUIRE_REDIS"}
	// EndToEnd is test/interop's tools (Node.js and the provider's npm
	// packages, Chromium, nginx, Caddy); its tests fail instead when CI is
	// set.
	EndToEnd = Need{"the end-to-end tools", "node, chromium, nginx, caddy and the npm packages: .ci/setup (as root) installs them", "CI"}
)

// Skip fails t when n's Require variable is set, and otherwise records the
// skip and skips t with the message.
func Skip(t testing.TB, n Need, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if v := os.Getenv(n.Require); n.Require != "" && v != "" && v != "0" {
		t.Fatalf("%s [%s is set: this test must run, not skip]", msg, n.Require)
	}
	record(t, n)
	t.Skip(msg)
}

// record appends one line "need<TAB>hint<TAB>package directory<TAB>test"
// to the skips file. A line is one write to a file opened for appending,
// so the packages' test processes running at once do not mix lines.
func record(t testing.TB, n Need) {
	path := os.Getenv(SkipsEnv)
	if path == "" {
		return
	}
	dir, _ := os.Getwd()
	line := strings.Join([]string{n.Name, n.Hint, dir, t.Name()}, "\t") + "\n"
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Logf("testneed: %s: %v", SkipsEnv, err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		t.Logf("testneed: %s: %v", SkipsEnv, err)
	}
}

// RedisURL returns TEST_REDIS_URL, or skips t (fails it with
// IDP_REQUIRE_REDIS set) saying what is skipped.
func RedisURL(t testing.TB, what string) string {
	t.Helper()
	u := os.Getenv("TEST_REDIS_URL")
	if u == "" {
		Skip(t, Redis, "TEST_REDIS_URL not set (e.g. redis://127.0.0.1:6379/0): %s skipped", what)
	}
	return u
}
