package makefile

import (
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
