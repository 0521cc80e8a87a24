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

// goBuild is one `go build` of a dry run.
type goBuild struct {
	flags string   // without -o and its argument: what decides which compiled packages the build cache can reuse
	pkgs  []string // the package patterns
}

// goBuilds returns the `go build` commands of a dry run, wherever they
// sit on a line (a background one in a subshell included).
func goBuilds(t *testing.T, out string) []goBuild {
	t.Helper()
	var builds []goBuild
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if !strings.HasSuffix(f[i], "go") || f[i+1] != "build" {
				continue
			}
			var b goBuild
			var flags []string
		args:
			for j := i + 2; j < len(f); j++ {
				switch a := f[j]; {
				case a == "-o":
					j++
				case strings.HasPrefix(a, ">") || strings.HasPrefix(a, "2>") || strings.HasPrefix(a, "&") || a == ";":
					break args
				case strings.HasPrefix(a, "./"):
					b.pkgs = append(b.pkgs, a)
				default:
					flags = append(flags, a)
				}
			}
			b.flags = strings.Join(flags, " ")
			builds = append(builds, b)
		}
	}
	if len(builds) == 0 {
		t.Fatalf("no go build command in:\n%s", out)
	}
	return builds
}

// listDeps lists the packages of patterns and their dependencies (what a
// build of them compiles), at the repository root.
func listDeps(t *testing.T, patterns []string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps"}, patterns...)...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %v: %v", patterns, err)
	}
	return strings.Fields(string(out))
}

// `make build` after `make demo` (the README's first two steps) must
// not compile again what the demo did, nor make the user wait for what
// the demo does not need (6 min 53 s on a new user's machine, against
// 26 s for the demo): the demo builds every package `make build` builds,
// with the same flags (a flag such as -trimpath on one and not the other
// compiles every dependency again), and the version is still stamped.
func TestBuildSharesTheDemosBuildCache(t *testing.T) {
	build := goBuilds(t, dryRun(t, "build", "VERSION=v9.9.9-test"))
	demo := goBuilds(t, dryRun(t, "demo", "VERSION=v9.9.9-test"))
	var demoPkgs, buildPkgs []string
	for _, b := range demo {
		if b.flags != build[0].flags {
			t.Errorf("make demo builds with other flags than make build (each set compiles every dependency once):\n build: %q\n demo:  %q", build[0].flags, b.flags)
		}
		demoPkgs = append(demoPkgs, b.pkgs...)
	}
	for _, b := range build {
		buildPkgs = append(buildPkgs, b.pkgs...)
	}
	built := map[string]bool{}
	for _, p := range listDeps(t, demoPkgs) {
		built[p] = true
	}
	var missing []string
	for _, p := range listDeps(t, buildPkgs) {
		if !built[p] {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		t.Errorf("make build compiles %d packages that make demo does not, e.g. %q: the user's next make build waits for them", len(missing), missing[:min(5, len(missing))])
	}
	if !strings.Contains(build[0].flags, "buildinfo.Version=v9.9.9-test") {
		t.Errorf("make build does not stamp VERSION: %q", build[0].flags)
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
