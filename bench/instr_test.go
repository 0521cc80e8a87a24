package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The stand-ins for valgrind's tools and wrk: the proxies run for real,
// without instrumentation, and the counts are constants. The valgrind
// stand-in behaves as valgrind 3.19 on a CPU without RDTSCP (it exits with
// "Unrecognised instruction" unless GODEBUG turns RDTSCP off, which the Go
// runtime on amd64 otherwise uses), or always dies with INSTR_STUB_DIE=1;
// wrk reports INSTR_STUB_REQUESTS requests.
var stubs = map[string]string{
	"valgrind": `#!/usr/bin/env bash
out=
while [ $# -gt 0 ]; do
	case "$1" in
	--callgrind-out-file=*) out=${1#*=}; shift;;
	--*) shift;;
	*) break;;
	esac
done
if [ -n "${INSTR_STUB_DIE:-}" ] || { [ -n "${INSTR_STUB_NEED_RDTSCP_OFF:-}" ] && [[ ",${GODEBUG:-}," != *,cpu.rdtscp=off,* ]]; }; then
	echo "vex amd64->IR: unhandled instruction bytes: 0xF 0x1 0xF9 0x48 0xC1 0xE2 0x20 0x48" >&2
	echo "valgrind: Unrecognised instruction at address 0x473a20." >&2
	echo "==1==    at 0x473A20: runtime.cputicks (asm_amd64.s:1000)" >&2
	exit 132
fi
echo "$out" >"$INSTR_STUB_DIR/cg.$$"
exec "$@"
`,
	"callgrind_control": `#!/usr/bin/env bash
if [ "$1" = -d ]; then echo "summary: 1" >"$(cat "$INSTR_STUB_DIR/cg.$2").1"; fi
`,
	"callgrind_annotate": `#!/usr/bin/env bash
echo "12,345,678 (100.0%)  PROGRAM TOTALS"
`,
	"wrk": `#!/usr/bin/env bash
echo "Running 1s test"
echo "  ${INSTR_STUB_REQUESTS:-1000} requests in 1.00s, 100.00KB read"
`,
}

// runInstr runs bench/instr.sh with the stand-ins first on PATH and the
// given extra environment; it returns stdout, stderr and the error.
func runInstr(t *testing.T, env ...string) (string, string, error) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the benchmark's programs: skipped with -short")
	}
	for _, c := range []string{"bash", "curl", "python3"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s is not installed", c)
		}
	}
	dir := t.TempDir()
	for name, text := range stubs {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "instr.sh")
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"INSTR_STUB_DIR="+dir, "INSTR_SECONDS=1")
	cmd.Env = append(cmd.Env, env...)
	// The script's own children (proxies, provider) go with it on timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("bench/instr.sh did not end within 4 minutes\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String(), err
}

// On a CPU without RDTSCP, valgrind 3.19 cannot run the instruction the
// Go runtime then uses: the script turns it off itself, and every case
// gets its row.
func TestInstrRunsWhereValgrindLacksRDTSCP(t *testing.T) {
	need := ""
	if runtime.GOARCH == "amd64" {
		need = "1"
	}
	stdout, stderr, err := runInstr(t, "INSTR_STUB_NEED_RDTSCP_OFF="+need)
	if err != nil {
		t.Fatalf("bench/instr.sh: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	for _, c := range []string{"bare-proxy", "idp-repeated", "idp-distinct", "idp-repeated-traced", "naive-distinct", "idp-hosts50", "idp-issuers3", "idp-exchange"} {
		if !strings.Contains(stdout, "| "+c+" | 1000 | 12345 |") {
			t.Errorf("no row for %s (1000 requests, 12345 instructions each):\n%s", c, stdout)
		}
	}
}

// A case that cannot be measured stops the run at once, naming the case
// and why, with no table: a proxy that valgrind cannot run, and a load
// that got no request answered. (No test here runs in parallel: each run
// picks free ports as the script does, and runs at once could be handed
// the same one.)
func TestInstrFailsLoudly(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  string
		want []string
	}{
		{"valgrind dies", "INSTR_STUB_DIE=1", []string{"bare-proxy: valgrind exited before answering", "Unrecognised instruction", "GODEBUG was"}},
		{"no requests", "INSTR_STUB_REQUESTS=0", []string{"bare-proxy: no requests"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			stdout, stderr, err := runInstr(t, tc.env)
			if err == nil {
				t.Fatalf("bench/instr.sh succeeded:\n%s", stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stdout, "| case |") {
				t.Errorf("a table was printed:\n%s", stdout)
			}
			if strings.Contains(stderr, "idp-repeated") {
				t.Errorf("the run went on after bare-proxy failed:\n%s", stderr)
			}
			t.Logf("failed after %v", time.Since(start).Round(time.Second))
		})
	}
}

// INSTR_CASES runs only the cases it names (and refuses a name that is no
// case, before building anything).
func TestInstrCasesSelects(t *testing.T) {
	stdout, stderr, err := runInstr(t, "INSTR_CASES=bare-proxy,idp-distinct")
	if err != nil {
		t.Fatalf("bench/instr.sh: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	for _, c := range []string{"bare-proxy", "idp-distinct"} {
		if !strings.Contains(stdout, "| "+c+" | 1000 | 12345 |") {
			t.Errorf("no row for %s:\n%s", c, stdout)
		}
	}
	for _, c := range []string{"idp-repeated", "naive-distinct", "idp-hosts50", "idp-repeated-traced"} {
		if strings.Contains(stdout, "| "+c+" |") {
			t.Errorf("a row for %s, which INSTR_CASES leaves out:\n%s", c, stdout)
		}
	}
	_, stderr, err = runInstr(t, "INSTR_CASES=bare-proxy idp-nope")
	if err == nil || !strings.Contains(stderr, "unknown case: idp-nope") {
		t.Fatalf("an unknown case: err %v, stderr:\n%s", err, stderr)
	}
}
