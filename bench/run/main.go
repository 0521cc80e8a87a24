// Command run is the load benchmark of idp-proxy and the shortener
// (DESIGN §7). It builds the binaries, starts them on loopback,
// drives them with wrk, interleaving the configurations compared with each
// other (A B A B ...), and writes raw results (JSON, TSV), a PNG plot and a
// results page with medians and ratios.
//
//	go run ./bench/run            # full run, writes bench/RESULTS.md and bench/results/
//	go run ./bench/run -smoke     # about a minute, one round, for CI; writes to a temp dir
//	go run ./bench/run -only tokens -rounds 1 -d 3s   # the many-distinct-tokens groups only
//
// Needs wrk on PATH (Debian: apt-get install wrk), gnuplot for the plot
// (optional), and PostgreSQL for the pgstore cases (BENCH_POSTGRES_DSN or
// TEST_POSTGRES_DSN; skipped when neither is set).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// options of one run.
type options struct {
	smoke    bool
	rounds   int
	duration time.Duration
	warmup   time.Duration
	conns    []int
	sizes    []int
	pgDSN    string
	root     string // module root
	out      string // raw results, plot, logs
	results  string // RESULTS.md path
	work     string // binaries, data files, request lists
	only     string // run only the groups whose name contains this
	rates    []int  // open-loop rates, requests/s
	distinct int    // distinct valid tokens of the tokens groups
	cacheSz  int    // idp-proxy's idp.verified_cache_size, 0: its default
	peers    string // auto, on, off: build and run oauth2-proxy
	keep     bool   // keep the previous results of the groups not run
	baseRev  string // git revision of cmd/shortener measured beside it in the redirect groups; "": none
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
}

func run() error {
	var o options
	flag.BoolVar(&o.smoke, "smoke", false, "short run for CI: 1 round, 2 s per case, 32 connections, 10k links only")
	flag.IntVar(&o.rounds, "rounds", 5, "rounds of each interleaved group (medians are reported)")
	flag.DurationVar(&o.duration, "d", 5*time.Second, "duration of each measured case")
	flag.StringVar(&o.out, "out", "", `directory for raw results, plot and logs (default "bench/results", or a temp dir with -smoke)`)
	flag.StringVar(&o.results, "results", "", `results page (default "bench/RESULTS.md", or OUT/RESULTS.md with -smoke)`)
	flag.StringVar(&o.pgDSN, "pg", "", "PostgreSQL DSN for the pgstore cases (default $BENCH_POSTGRES_DSN, then $TEST_POSTGRES_DSN; \"off\" skips them)")
	flag.StringVar(&o.only, "only", "", `run only the groups whose name contains this (e.g. "redirect bolt", "proxy c32", "tokens")`)
	flag.IntVar(&o.distinct, "distinct", 0, "distinct valid tokens of the tokens groups (default 40000, 2000 with -smoke)")
	flag.IntVar(&o.cacheSz, "cache", -1, "idp-proxy's idp.verified_cache_size when the tokens groups run (default: its own, 10000; with -smoke, -distinct/4); 0: its own")
	flag.StringVar(&o.peers, "peers", "auto", `build and run oauth2-proxy: "on", "off", or "auto" (always in a full run; with -smoke only when its module is already in the module cache)`)
	flag.StringVar(&o.baseRev, "shortener-base", "", "also measure cmd/shortener built at this git revision in the redirect groups (cases base-shortener and base-shortener-nocache), for a before/after in one run")
	flag.BoolVar(&o.keep, "keep", false, "keep the samples of the groups this run does not measure (see -only) from the previous results.json in -out, so that the results page keeps them")
	flag.Parse()
	switch o.peers {
	case "auto", "on", "off":
	default:
		return fmt.Errorf("-peers %q: want auto, on or off", o.peers)
	}

	root, err := moduleRoot()
	if err != nil {
		return err
	}
	o.root = root
	o.conns, o.sizes, o.warmup = []int{32, 128}, []int{10_000, 1_000_000}, time.Second
	o.rates = []int{1000, 3000}
	if o.distinct <= 0 {
		o.distinct = 40_000
		if o.smoke {
			o.distinct = 2000
		}
	}
	if o.smoke {
		o.rounds, o.duration, o.warmup = 1, 2*time.Second, 0
		o.conns, o.sizes, o.rates = []int{32}, []int{10_000}, []int{1000}
		if o.cacheSz < 0 {
			o.cacheSz = o.distinct / 4 // the full run's ratio: 40,000 tokens, 10,000 cached
		}
	}
	o.cacheSz = max(o.cacheSz, 0)
	if o.pgDSN == "" {
		o.pgDSN = os.Getenv("BENCH_POSTGRES_DSN")
	}
	if o.pgDSN == "" {
		o.pgDSN = os.Getenv("TEST_POSTGRES_DSN")
	}
	if o.pgDSN == "off" {
		o.pgDSN = ""
	}
	if _, err := exec.LookPath("wrk"); err != nil {
		return fmt.Errorf("wrk not found on PATH (Debian/Ubuntu: apt-get install wrk): %w", err)
	}
	work, err := os.MkdirTemp("", "idp-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	o.work = work
	if o.out == "" {
		o.out = filepath.Join(root, "bench", "results")
		if o.smoke {
			// Kept after the run (the work directory is not), for CI logs.
			if o.out, err = os.MkdirTemp("", "idp-bench-smoke-"); err != nil {
				return err
			}
		}
	}
	if o.results == "" {
		o.results = filepath.Join(root, "bench", "RESULTS.md")
		if o.smoke {
			o.results = filepath.Join(o.out, "RESULTS.md")
		}
	}
	logDir := filepath.Join(o.out, "logs")
	if err := os.MkdirAll(logDir, 0o750); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	started := time.Now()
	rep := &report{Started: started.UTC(), Smoke: o.smoke, Rounds: o.rounds, Duration: o.duration.String(),
		Machine: machineInfo(ctx, root, work)}

	logf("building binaries into %s", work)
	bins, missing, err := buildAll(ctx, root, filepath.Join(work, "bin"), map[string]string{
		"upstream":   "./bench/upstream",
		"bareproxy":  "./bench/bareproxy",
		"const302":   "./bench/const302",
		"provider":   "./bench/provider",
		"naiveproxy": "./bench/naiveproxy",
		"shortener":  "./cmd/shortener",
	}, map[string]string{"idp-proxy": "./cmd/idp-proxy"})
	if err != nil {
		return err
	}
	for name, msg := range missing {
		rep.note("%s could not be built, its cases are skipped: %s", name, firstLine(msg))
	}
	if o.baseRev != "" {
		path, err := buildAt(ctx, root, o.baseRev, filepath.Join(work, "base"), "./cmd/shortener")
		if err != nil {
			return fmt.Errorf("-shortener-base: %w", err)
		}
		bins["shortener-base"] = path
	}
	h := &harness{o: o, bins: bins, logDir: logDir, rep: rep}
	if _, tokenGroups := h.proxyGroups(); h.selectsAny(tokenGroups) {
		path, pb := buildPeers(ctx, o, filepath.Join(work, "bin"))
		rep.Peers = append(rep.Peers, pb)
		if path != "" {
			bins[o2pName] = path
		} else {
			rep.note("%s@%s not measured: %s", o2pName, o2pVersion, pb.Note)
		}
	}

	if err := h.proxyPhase(ctx); err != nil {
		rep.note("proxy phase: %v", err)
		logf("proxy phase: %v", err)
	}
	if err := h.shortenerPhases(ctx); err != nil {
		rep.note("shortener phase: %v", err)
		logf("shortener phase: %v", err)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	rep.Elapsed = time.Since(started).Round(time.Second).String()
	if o.keep {
		if err := h.keepPrevious(filepath.Join(o.out, "results.json")); err != nil {
			return fmt.Errorf("-keep: %w", err)
		}
	}
	rep.summarize()
	if err := rep.write(o); err != nil {
		return err
	}
	logf("done in %s: %s, %s", rep.Elapsed, o.results, o.out)
	return nil
}

// moduleRoot is the directory of go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("run from inside the module (go run ./bench/run)")
	}
	return filepath.Dir(gomod), nil
}

func firstLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for _, l := range lines {
		if l != "" && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	return s
}

// machine describes where the run happened.
type machine struct {
	CPUs      int    `json:"cpus"`
	Model     string `json:"cpu_model"`
	Kernel    string `json:"kernel"`
	Go        string `json:"go"`
	Wrk       string `json:"wrk"`
	Postgres  string `json:"postgres,omitempty"`
	Commit    string `json:"commit"`
	LoadAvg   string `json:"loadavg_at_start"`
	WorkFS    string `json:"work_fs"`
	MemTotalM int64  `json:"mem_total_mib"`
}

func machineInfo(ctx context.Context, root, work string) machine {
	cmdOut := func(name string, args ...string) string {
		c := exec.CommandContext(ctx, name, args...)
		c.Dir = root
		out, _ := c.Output()
		return strings.TrimSpace(string(out))
	}
	m := machine{
		Kernel: cmdOut("uname", "-sr"),
		Go:     cmdOut("go", "version"),
		Wrk:    wrkVersion(),
		Commit: cmdOut("git", "rev-parse", "--short", "HEAD"),
	}
	if n := cmdOut("nproc"); n != "" {
		_, _ = fmt.Sscan(n, &m.CPUs)
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.Model = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.LoadAvg = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "MemTotal:") {
				_, _ = fmt.Sscan(strings.TrimPrefix(l, "MemTotal:"), &kb)
			}
		}
		m.MemTotalM = kb / 1024
	}
	if out := cmdOut("df", "--output=fstype", work); out != "" {
		f := strings.Fields(out)
		m.WorkFS = f[len(f)-1]
	}
	return m
}

// writeJSON writes v indented to path.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
