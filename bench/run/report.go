package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// report is the raw results file (results.json) and the source of the
// results page.
type report struct {
	Started  time.Time   `json:"started"`
	Elapsed  string      `json:"elapsed"`
	Smoke    bool        `json:"smoke"`
	Rounds   int         `json:"rounds"`
	Duration string      `json:"duration_per_case"`
	Machine  machine     `json:"machine"`
	Notes    []string    `json:"notes,omitempty"`
	Peers    []peerBuild `json:"peers,omitempty"`
	Samples  []sample    `json:"samples"`
	Summary  []summary   `json:"summary"`
	Ratios   []ratio     `json:"ratios"`
	Targets  []target    `json:"targets"`
	// TokenTargets are the targets of the tokens groups (many distinct tokens), judged
	// from the "tokens" groups.
	TokenTargets []target `json:"token_targets,omitempty"`
}

// summary holds the medians of one case over the rounds.
type summary struct {
	Group    string  `json:"group"`
	Case     string  `json:"case"`
	Conns    int     `json:"conns"`
	Rounds   int     `json:"rounds"`
	RPS      float64 `json:"rps_median"`
	P50ms    float64 `json:"p50_ms_median"`
	P99ms    float64 `json:"p99_ms_median"`
	Process  string  `json:"process"`
	PeakKiB  int64   `json:"peak_rss_kib"`
	Problems int     `json:"rounds_with_problems"`
	Command  string  `json:"command"`

	// Open loop (medians, except the counts: sums over the rounds).
	Rate    int     `json:"rate,omitempty"`
	P999ms  float64 `json:"p999_ms_median,omitempty"`
	MaxMs   float64 `json:"max_ms_median,omitempty"`
	Late    int64   `json:"late,omitempty"`
	Dropped int64   `json:"dropped,omitempty"`
	Errors  int64   `json:"errors,omitempty"`
	// GCPer1k is the median of Process's garbage collections per 1,000
	// requests, when it exports them (-1: unknown).
	GCPer1k float64 `json:"gc_per_1k_requests"`
	// Cached is idp-proxy's number of cached tokens after the last round.
	Cached *int64 `json:"verified_tokens_cached,omitempty"`
	// CPUus is the median of Process's CPU time per request, in
	// microseconds (0: unknown).
	CPUus float64 `json:"cpu_us_per_request_median,omitempty"`
}

type ratio struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

type target struct {
	Name   string `json:"name"`
	Want   string `json:"want"`
	Got    string `json:"got"`
	Met    bool   `json:"met"`
	Margin string `json:"margin"`
}

func (r *report) note(format string, a ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, a...))
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (r *report) summarize() {
	type key struct{ g, c string }
	var order []key
	by := map[key][]sample{}
	for _, s := range r.Samples {
		k := key{s.Group, s.Case}
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], s)
	}
	r.Summary = nil
	for _, k := range order {
		ss := by[k]
		var rps, p50, p99, p999, maxs, gcs, cpu []float64
		sum := summary{Group: k.g, Case: k.c, Conns: ss[0].Conns, Process: ss[0].Proc, Command: ss[0].Command}
		for _, s := range ss {
			if s.Problem != "" {
				sum.Problems++
			}
			if o := s.Open; o != nil {
				sum.Rate = o.Rate
				sum.Late, sum.Dropped, sum.Errors = sum.Late+o.Late, sum.Dropped+o.Dropped, sum.Errors+o.Errors
			}
			if s.Requests == 0 {
				continue
			}
			sum.Rounds++
			rps, p50, p99 = append(rps, s.RPS), append(p50, s.P50ms), append(p99, s.P99ms)
			if o := s.Open; o != nil {
				p999, maxs = append(p999, o.P999ms), append(maxs, o.MaxMs)
			}
			if s.GCs != nil {
				gcs = append(gcs, float64(*s.GCs)*1000/float64(s.Requests))
			}
			if s.CachedTokens != nil {
				sum.Cached = s.CachedTokens
			}
			if s.CPUus > 0 {
				cpu = append(cpu, s.CPUus)
			}
			if m, ok := s.Mem[sum.Process]; ok && m.HWM > sum.PeakKiB {
				sum.PeakKiB = m.HWM
			}
		}
		sum.RPS, sum.P50ms, sum.P99ms = median(rps), median(p50), median(p99)
		sum.P999ms, sum.MaxMs, sum.GCPer1k, sum.CPUus = median(p999), median(maxs), -1, median(cpu)
		if len(gcs) > 0 {
			sum.GCPer1k = median(gcs)
		}
		r.Summary = append(r.Summary, sum)
	}
	r.ratiosAndTargets()
	r.tokenTargets()
	r.ingressRatios()
}

func (r *report) find(group, c string) (summary, bool) {
	for _, s := range r.Summary {
		if s.Group == group && s.Case == c && s.Rounds > 0 {
			return s, true
		}
	}
	return summary{}, false
}

func (r *report) ratiosAndTargets() {
	r.Ratios, r.Targets = nil, nil
	add := func(name string, a, b summary) float64 {
		v := a.RPS / b.RPS
		r.Ratios = append(r.Ratios, ratio{name, v})
		return v
	}
	tgt := func(name, want, got string, met bool, margin string) {
		r.Targets = append(r.Targets, target{name, want, got, met, margin})
	}
	var proxyPeak int64
	for _, s := range r.Summary {
		if !strings.HasPrefix(s.Group, "proxy ") {
			continue
		}
		if s.Process == "idp-proxy" && s.PeakKiB > proxyPeak {
			proxyPeak = s.PeakKiB
		}
		if s.Case != "bare-proxy" {
			continue
		}
		g, bare := s.Group, s
		if direct, ok := r.find(g, "direct"); ok {
			add(g+": bare-proxy / direct", bare, direct)
		}
		for _, c := range []string{"idp-valid", "idp-rotating", "idp-public", "idp-invalid"} {
			x, ok := r.find(g, c)
			if !ok {
				continue
			}
			v := add(g+": "+c+" / bare-proxy", x, bare)
			if direct, ok := r.find(g, "direct"); ok {
				add(g+": "+c+" / direct", x, direct)
			}
			if c == "idp-valid" {
				tgt(g+": idp-proxy (valid token) / bare proxy", "≥ 0.85", fmt.Sprintf("%.2f", v), v >= 0.85, fmt.Sprintf("%+.0f%%", (v/0.85-1)*100))
				added := x.P99ms - bare.P99ms
				tgt(g+": added p99 latency (valid token)", "≤ 1 ms", fmt.Sprintf("%.2f ms", added), added <= 1, fmt.Sprintf("%+.2f ms", 1-added))
			}
		}
	}
	if proxyPeak > 0 {
		mb := float64(proxyPeak) / 1024
		tgt("idp-proxy peak RSS under load", "≤ 64 MiB", fmt.Sprintf("%.1f MiB", mb), mb <= 64, fmt.Sprintf("%+.1f MiB", 64-mb))
	}
	for _, s := range r.Summary {
		if strings.HasPrefix(s.Group, "redirect ") && strings.HasPrefix(s.Case, "base-") {
			if base, ok := r.find(s.Group, "const302"); ok {
				add(s.Group+": "+s.Case+" / const302", s, base) // -shortener-base: the before
			}
			continue
		}
		if !strings.HasPrefix(s.Group, "redirect ") || !strings.HasPrefix(s.Case, "shortener") {
			continue
		}
		base, ok := r.find(s.Group, "const302")
		if !ok {
			continue
		}
		variant := "default: cache on, statistics on"
		switch s.Case {
		case "shortener-nocache":
			variant = "--cache-size 0, statistics on"
		case "shortener-nostats":
			variant = "--visit-stats=false"
		}
		v := add(s.Group+": "+s.Case+" / const302", s, base)
		tgt(fmt.Sprintf("%s: redirects / constant 302 (%s)", s.Group, variant), "≥ 0.90", fmt.Sprintf("%.2f", v), v >= 0.9, fmt.Sprintf("%+.0f%%", (v/0.9-1)*100))
		if off, ok := r.find(s.Group, "shortener-nostats"); ok && s.Case == "shortener" && off.CPUus > 0 {
			add(s.Group+": shortener (statistics on) / shortener-nostats", s, off)
			r.Ratios = append(r.Ratios, ratio{s.Group + ": CPU µs per redirect, statistics on − off", s.CPUus - off.CPUus})
		}
		if !strings.HasSuffix(s.Group, " 1M") {
			continue
		}
		if s.Case == "shortener" {
			mb := float64(s.PeakKiB) / 1024
			tgt(s.Group+": shortener peak RSS", "≤ 128 MiB", fmt.Sprintf("%.1f MiB", mb), mb <= 128, fmt.Sprintf("%+.1f MiB", 128-mb))
		}
		small, ok := r.find(strings.TrimSuffix(s.Group, "1M")+"10k", s.Case)
		if ok && small.P50ms > 0 {
			f := s.P50ms / small.P50ms
			r.Ratios = append(r.Ratios, ratio{s.Group + ": " + s.Case + " p50 latency 1M / 10k", f})
			tgt(fmt.Sprintf("%s: redirect p50 latency 1M vs 10k links, flat (%s)", strings.TrimSuffix(s.Group, " 1M"), variant), "≤ 1.25×",
				fmt.Sprintf("%.2f× (%.3f → %.3f ms)", f, small.P50ms, s.P50ms), f <= 1.25, fmt.Sprintf("%+.2f×", 1.25-f))
		}
	}
	if s, ok := r.find("create bolt", "c32"); ok {
		tgt("bbolt durable creates/s at 32 clients", "≥ 2,000/s", fmt.Sprintf("%.0f/s", s.RPS), s.RPS >= 2000, fmt.Sprintf("%+.0f%%", (s.RPS/2000-1)*100))
	}
}

// write stores results.json, results.tsv, the plot and the results page.
func (r *report) write(o options) error {
	if err := writeJSON(filepath.Join(o.out, "results.json"), r); err != nil {
		return err
	}
	var tsv strings.Builder
	tsv.WriteString("label\trps\tp50_ms\tp99_ms\n")
	var olTSV strings.Builder
	olTSV.WriteString("label\trate\tachieved_rps\tp50_ms\tp99_ms\tp999_ms\tmax_ms\tlate\tdropped\terrors\n")
	for _, s := range r.Summary {
		if s.Rounds == 0 {
			continue
		}
		if s.Rate > 0 { // open loop: its own file, not in the throughput plot
			fmt.Fprintf(&olTSV, "%s: %s\t%d\t%.1f\t%.4f\t%.4f\t%.4f\t%.4f\t%d\t%d\t%d\n", s.Group, s.Case, s.Rate, s.RPS,
				s.P50ms, s.P99ms, s.P999ms, s.MaxMs, s.Late, s.Dropped, s.Errors)
			continue
		}
		fmt.Fprintf(&tsv, "%s: %s\t%.1f\t%.4f\t%.4f\n", s.Group, s.Case, s.RPS, s.P50ms, s.P99ms)
	}
	tsvPath := filepath.Join(o.out, "results.tsv")
	if err := os.WriteFile(tsvPath, []byte(tsv.String()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.out, "openloop.tsv"), []byte(olTSV.String()), 0o644); err != nil {
		return err
	}
	png := filepath.Join(o.out, "bench.png")
	if _, err := exec.LookPath("gnuplot"); err != nil {
		r.note("gnuplot not found: no plot (apt-get install gnuplot-nox)")
		png = ""
	} else {
		script := filepath.Join(o.root, "bench", "plot.gp")
		cmd := exec.Command("gnuplot", "-e", fmt.Sprintf("in='%s'; out='%s'", tsvPath, png), script)
		if out, err := cmd.CombinedOutput(); err != nil {
			r.note("gnuplot failed: %v %s", err, firstLine(string(out)))
			png = ""
		}
	}
	return os.WriteFile(o.results, []byte(r.markdown(o, png)), 0o644)
}

func (r *report) markdown(o options, png string) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	mode := "full run"
	switch {
	case r.Smoke:
		mode = "smoke run (not meaningful as figures)"
	case o.only != "" && o.keep:
		mode = fmt.Sprintf("`-only %s -keep`: the other groups come from an earlier run, see Notes", o.only)
	case o.only != "":
		mode = fmt.Sprintf("`-only %s`", o.only)
	}
	p("# Benchmark results")
	p("")
	p("Generated by `go run ./bench/run` (%s) on %s, %s; %d round(s) of %s per case, interleaved (A B A B ...), medians reported. Raw results: `%s`.",
		mode, r.Started.Format("2006-01-02 15:04 UTC"), "took "+r.Elapsed, r.Rounds, r.Duration, relTo(o.results, filepath.Join(o.out, "results.json")))
	p("")
	p("## Machine")
	p("")
	m := r.Machine
	p("| | |")
	p("|---|---|")
	p("| CPUs (nproc) | %d |", m.CPUs)
	p("| CPU model | %s |", m.Model)
	p("| memory | %d MiB |", m.MemTotalM)
	p("| kernel | %s |", m.Kernel)
	p("| Go | %s |", m.Go)
	p("| load generator | %s, 2 threads (1 for 1 connection), `--latency` |", m.Wrk)
	p("| commit | %s |", m.Commit)
	p("| load average at start | %s |", m.LoadAvg)
	p("| data files on | %s |", m.WorkFS)
	p("")
	p("Everything runs on loopback on the same machine as wrk, which takes part of the CPUs: figures compare configurations measured side by side, not absolute capacity. The machine is shared with other work; interleaving spreads that noise over all configurations.")
	p("")
	if png != "" {
		p("![throughput and latency per configuration](%s)", relTo(o.results, png))
		p("")
	}
	p("## Targets (DESIGN §7)")
	p("")
	if len(r.Targets) == 0 {
		p("None measured in this run (see -only).")
	} else {
		p("| target | want | got | met | margin |")
		p("|---|---|---|---|---|")
	}
	for _, t := range r.Targets {
		met := "yes"
		if !t.Met {
			met = "**no**"
		}
		p("| %s | %s | %s | %s | %s |", t.Name, t.Want, t.Got, met, t.Margin)
	}
	p("")
	r.tokensMarkdown(p)
	r.ingressMarkdown(p)
	p("## Ratios (requests/s, medians)")
	p("")
	p("| ratio | value |")
	p("|---|---|")
	for _, x := range r.Ratios {
		p("| %s | %.3f |", x.Name, x.Value)
	}
	p("")
	p("## Results")
	p("")
	p("| group | case | conns | req/s | p50 ms | p99 ms | CPU µs/req | peak RSS (process) | GC per 1k req | rounds | problems |")
	p("|---|---|---|---|---|---|---|---|---|---|---|")
	for _, s := range r.Summary {
		conns := fmt.Sprint(s.Conns)
		if s.Rate > 0 {
			conns = fmt.Sprintf("open %d/s", s.Rate)
		}
		cpu := "–"
		if s.CPUus > 0 {
			cpu = fmt.Sprintf("%.1f", s.CPUus)
		}
		p("| %s | %s | %s | %.0f | %.3f | %.3f | %s | %.1f MiB (%s) | %s | %d | %d |", s.Group, s.Case, conns, s.RPS, s.P50ms, s.P99ms,
			cpu, float64(s.PeakKiB)/1024, s.Process, gcCell(s), s.Rounds, s.Problems)
	}
	p("")
	p("Peak RSS is VmHWM of the process, reset before each measured case (`/proc/PID/clear_refs`), maximum over the rounds. For bbolt it includes the pages of the memory-mapped file that were read.")
	p("")
	p("Cases: `direct` = wrk → upstream; `bare-proxy` = a bare `httputil.ReverseProxy` (bench/bareproxy); `idp-public` = idp-proxy on a public route, no token; `idp-valid` = the same valid RS256 token on every request; `idp-rotating` = 1,000 distinct valid tokens in turn; `idp-invalid` = 1,000 invalid tokens (bad signature, expired, wrong audience) in turn, every answer checked non-2xx and the upstream's request counter checked unchanged. `const302` = bench/const302, a constant 302 served by internal/server with cmd/shortener's options; `shortener` = cmd/shortener with its defaults (metrics on, on a free port of their own; redirect cache of 100,000 links) except the access log (off), redirecting 1,000 distinct preloaded codes in turn (after the first pass they are cache hits), every request with a browser's User-Agent and a Referer (as the constant 302's), so visit statistics (on by default) classify and count each one; `shortener-nostats` = the same with `--visit-stats=false`; `shortener-nocache` = the same with statistics and `--cache-size 0`, so every redirect reads the store (for bbolt, copies of the same file); `base-shortener`, `base-shortener-nocache` (with `-shortener-base REV` only) = cmd/shortener built at git revision REV, by default and with `--cache-size 0`: the before of a before/after measured in the same run; CPU µs/req = the process's user + system CPU time during the run over the requests answered (the budget of paths that do I/O: see bench/README.md); `create` = POST /shorten with 1 or 32 connections (a 201 is fsynced). The `tokens` groups are described in the section on many distinct tokens.")
	p("")
	if len(r.Notes) > 0 {
		p("## Notes")
		p("")
		for _, n := range r.Notes {
			p("- %s", n)
		}
		p("")
	}
	p("## Commands")
	p("")
	p("```")
	p("make bench        # go run ./bench/run             (full run, writes bench/RESULTS.md and bench/results/)")
	p("make bench-smoke  # go run ./bench/run -smoke      (CI: one short round, no thresholds)")
	p("go test -run '^$' -bench . -benchmem ./pkg/shortener/ ./pkg/idp/ ./pkg/proxy/   # micro-benchmarks")
	p("```")
	p("")
	p("One wrk command line per case (ports are picked at run time; request lists and tokens are generated):")
	p("")
	p("```")
	for _, s := range r.Summary {
		p("# %s / %s", s.Group, s.Case)
		p("%s", s.Command)
	}
	p("```")
	return b.String()
}

// relTo returns target relative to the directory of file, for links.
func relTo(file, target string) string {
	rel, err := filepath.Rel(filepath.Dir(file), target)
	if err != nil {
		return target
	}
	return filepath.ToSlash(rel)
}
