package makefile

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// dryRun is `make -n target` at the repository root, with extra
// variables.
func dryRun(t *testing.T, target string, vars ...string) string {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	cmd := exec.Command("make", append([]string{"-n", "-C", "../..", "--no-print-directory", target}, vars...)...)
	cmd.Env = append(os.Environ(), "MAKEFLAGS=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n %s: %v\n%s", target, err, out)
	}
	return string(out)
}

// The fuzz target's help comment states the default FUZZTIME; the
// recipe must run that default, and FUZZTIME=... must override it.
func TestFuzzTimeDefaultAsDocumented(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^fuzz:.*##.*default (\w+)`).FindSubmatch(mk)
	if m == nil {
		t.Fatal(`the Makefile's fuzz target has no "## ... default <duration>" comment`)
	}
	documented := string(m[1])
	if out := dryRun(t, "fuzz"); !strings.Contains(out, "fuzz.sh "+documented) {
		t.Errorf("make fuzz runs %q; its comment says the default is %s", strings.TrimSpace(out), documented)
	}
	if out := dryRun(t, "fuzz", "FUZZTIME=3s"); !strings.Contains(out, "fuzz.sh 3s") {
		t.Errorf("make fuzz FUZZTIME=3s runs %q", strings.TrimSpace(out))
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := "FUZZTIME (default " + documented + ")"; !strings.Contains(string(readme), want) {
		t.Errorf("README.md does not say %q", want)
	}
}

// staticcheck is installed at one pinned release, never @latest: a new
// release with new checks must not turn `make lint` red on its own.
func TestStaticcheckPinned(t *testing.T) {
	out := dryRun(t, "staticcheck", "GOBIN=/nonexistent")
	if strings.Contains(out, "@latest") {
		t.Errorf("make staticcheck installs @latest:\n%s", out)
	}
	if !regexp.MustCompile(`staticcheck@v\d+\.\d+\.\d+`).MatchString(out) {
		t.Errorf("make staticcheck installs no pinned version:\n%s", out)
	}
}

// goBuildFlags returns the flags of each `go build` line in a dry run,
// without -o and its argument and without the packages: the flags that
// decide which compiled packages the build cache can reuse.
func goBuildFlags(t *testing.T, out string) []string {
	t.Helper()
	var flags []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "@"))
		if len(f) < 2 || f[1] != "build" || !strings.HasSuffix(f[0], "go") {
			continue
		}
		var kept []string
		for i := 2; i < len(f); i++ {
			switch {
			case f[i] == "-o":
				i++
			case strings.HasPrefix(f[i], "./"):
			default:
				kept = append(kept, f[i])
			}
		}
		flags = append(flags, strings.Join(kept, " "))
	}
	if len(flags) == 0 {
		t.Fatalf("no go build command in:\n%s", out)
	}
	return flags
}

// `make build` after `make demo` (the README's first two steps) must
// reuse what the demo compiled: a flag such as -trimpath on one and not
// the other compiles every dependency again (6 min 53 s on a new user's
// machine, against 26 s for the demo). Both build with the same flags,
// and the version is still stamped.
func TestBuildSharesTheDemosBuildCache(t *testing.T) {
	build := goBuildFlags(t, dryRun(t, "build", "VERSION=v9.9.9-test"))
	demo := goBuildFlags(t, dryRun(t, "demo", "VERSION=v9.9.9-test"))
	for _, b := range append(build, demo...) {
		if b != build[0] {
			t.Errorf("make build and make demo build with different flags (each set compiles every dependency once):\n build: %q\n demo:  %q", build, demo)
			break
		}
	}
	if !strings.Contains(build[0], "buildinfo.Version=v9.9.9-test") {
		t.Errorf("make build does not stamp VERSION: %q", build[0])
	}
}

// makeTest runs `make test` on the fixture package testdata/skips, with
// no PostgreSQL, and the extra environment; it returns the output and the
// exit code.
func makeTest(t *testing.T, env ...string) (string, int) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs make test: skipped with -short")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	cmd := exec.Command("make", "-C", "../..", "--no-print-directory", "test", "PKGS=./test/makefile/testdata/skips")
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "TEST_POSTGRES_DSN", "IDP_REQUIRE_POSTGRES", "IDP_TEST_SKIPS", "MAKEFLAGS":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("make test: %v\n%s", err, out)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// go test says "ok" for a package whose tests all skipped for want of
// PostgreSQL (or Redis, or the end-to-end tools): `make test` says on one
// line at the end what did not run and what to set, and keeps go test's
// exit status.
func TestMakeTestSaysWhatSkipped(t *testing.T) {
	out, code := makeTest(t)
	if code != 0 {
		t.Fatalf("make test exited %d:\n%s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	for _, want := range []string{"1 test in ./test/makefile/testdata/skips needs TEST_POSTGRES_DSN", "TEST_POSTGRES_DSN=postgres://"} {
		if !strings.Contains(last, want) {
			t.Errorf("the last line does not say %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "ok  \tgithub.com/idp-proxy/idp-proxy/test/makefile/testdata/skips") {
		t.Errorf("no ok line for the package:\n%s", out)
	}

	out, code = makeTest(t, "MAKEFILE_FIXTURE_FAIL=1")
	if code == 0 {
		t.Errorf("make test with a failing test exited 0:\n%s", out)
	}
	if !strings.Contains(out, "needs TEST_POSTGRES_DSN") {
		t.Errorf("the failed run does not say what skipped:\n%s", out)
	}
}
