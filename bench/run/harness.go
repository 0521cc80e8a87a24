package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

type harness struct {
	o      options
	bins   map[string]string
	logDir string
	rep    *report

	portsMu sync.Mutex
	ports   map[string]bool // addresses freeAddr has handed out
}

// benchCase is one configuration measured by wrk, or by the open-loop
// generator when Open is set.
type benchCase struct {
	Name   string
	Proc   string // the process the case is about, for its peak RSS
	Load   load
	Reject bool // every answer must be non-2xx/3xx, and the upstream untouched

	Open *openLoad // fixed-rate load (openloop.go) instead of wrk
	// Ring, when set, is the token list Load's script (rotate.lua) or Open
	// cycles: each run starts where the previous one stopped, so that the
	// tokens a run sends were not sent recently (cache misses).
	Ring *tokenRing
	// Metrics is Proc's Prometheus endpoint: its garbage collections (and
	// idp-proxy's cached tokens) are read before and after each run.
	Metrics string
}

// sample is one measurement of one case.
type sample struct {
	Group string `json:"group"`
	Case  string `json:"case"`
	Round int    `json:"round"`
	Conns int    `json:"conns"`
	Proc  string `json:"process"`
	wrkResult
	Open         *openStats          `json:"open_loop,omitempty"`
	GCs          *int64              `json:"gc_cycles,omitempty"`              // of Proc during the run
	CachedTokens *int64              `json:"verified_tokens_cached,omitempty"` // idp-proxy, after the run
	Mem          map[string]memStats `json:"mem"`
	// CPUus is Proc's CPU time (user + system) per request during the
	// run, in microseconds (0: unknown).
	CPUus        float64 `json:"cpu_us_per_request,omitempty"`
	UpstreamHits *int64  `json:"upstream_hits,omitempty"`
	Problem      string  `json:"problem,omitempty"`
}

// tokenRing is a list of n tokens cycled from two fronts half the list
// apart (the two wrk threads, or the open-loop generator's even and odd
// requests); pos is where the next run starts.
type tokenRing struct{ n, pos int }

func (r *tokenRing) base() int { return r.pos }

// advance moves the fronts past a run of reqs requests, with a margin for
// uneven progress of the two fronts.
func (r *tokenRing) advance(reqs int64) {
	if r.n > 0 {
		r.pos = int((int64(r.pos) + reqs/2 + reqs/32 + 256) % int64(r.n))
	}
}

// drive runs one case for d with wrk or the open-loop generator.
func (h *harness) drive(ctx context.Context, c benchCase, d time.Duration) (wrkResult, *openStats, error) {
	base := 0
	if c.Ring != nil {
		base = c.Ring.base()
	}
	if c.Open != nil {
		res, st, err := runOpenLoop(ctx, *c.Open, base, d)
		if c.Ring != nil {
			c.Ring.advance(st.Sent)
		}
		return res, &st, err
	}
	l := c.Load
	if c.Ring != nil && len(l.Args) > 0 {
		l.Args = []string{l.Args[0], strconv.Itoa(wrkThreads(l.Conns)), strconv.Itoa(base)}
	}
	res, err := runWrk(ctx, l, d)
	if c.Ring != nil {
		c.Ring.advance(res.Requests)
	}
	return res, nil, err
}

// runGroup measures cases interleaved: round after round, each case once
// per round in the same order (A B C A B C ...), so that drifts of a shared
// machine hit every configuration alike.
func (h *harness) runGroup(ctx context.Context, group string, cases []benchCase, procs []*proc, upstream string) {
	if !h.selected(group) {
		return
	}
	if h.o.warmup > 0 {
		for _, c := range cases {
			if _, _, err := h.drive(ctx, c, h.o.warmup); err != nil {
				h.rep.note("%s/%s warm-up: %v", group, c.Name, firstLine(err.Error()))
			}
		}
	}
	for r := range h.o.rounds {
		for _, c := range cases {
			if ctx.Err() != nil {
				return
			}
			h.rep.Samples = append(h.rep.Samples, h.measure(ctx, group, r, c, procs, upstream))
		}
	}
}

// measure runs one case once and checks its answers.
func (h *harness) measure(ctx context.Context, group string, round int, c benchCase, procs []*proc, upstream string) sample {
	for _, p := range procs {
		resetPeak(p.pid())
	}
	before := settledHits(upstream)
	var cpuProc *proc
	for _, p := range procs {
		if p.name == c.Proc {
			cpuProc = p
		}
	}
	cpu0 := time.Duration(-1)
	if cpuProc != nil {
		if t, err := cpuTime(cpuProc.pid()); err == nil {
			cpu0 = t
		}
	}
	gc0 := int64(-1)
	if c.Metrics != "" {
		if v, err := gcCount(c.Metrics); err == nil {
			gc0 = v
		}
	}
	res, open, err := h.drive(ctx, c, h.o.duration)
	cpu1 := time.Duration(-1)
	if cpu0 >= 0 {
		if t, err := cpuTime(cpuProc.pid()); err == nil {
			cpu1 = t
		}
	}
	conns := c.Load.Conns
	if open != nil {
		conns = 0
	}
	s := sample{Group: group, Case: c.Name, Round: round, Conns: conns, Proc: c.Proc, wrkResult: res, Open: open, Mem: map[string]memStats{}}
	if cpu1 >= 0 && res.Requests > 0 {
		s.CPUus = float64(cpu1-cpu0) / float64(time.Microsecond) / float64(res.Requests)
	}
	if gc0 >= 0 {
		if m, err := scrape(c.Metrics, metricGCCount, metricCachedToken); err == nil {
			if v, ok := m[metricGCCount]; ok {
				n := int64(v) - gc0
				s.GCs = &n
			}
			if v, ok := m[metricCachedToken]; ok {
				n := int64(v)
				s.CachedTokens = &n
			}
		}
	}
	for _, p := range procs {
		if m, err := readMem(p.pid()); err == nil {
			s.Mem[p.name] = m
		}
	}
	if upstream != "" {
		if after, err := upstreamHits(upstream); err == nil {
			d := after - before
			s.UpstreamHits = &d
		}
	}
	switch {
	case err != nil:
		s.Problem = firstLine(err.Error())
	case s.Requests == 0:
		s.Problem = "no requests completed"
	case c.Reject && s.Non2xx3xx != s.Requests:
		s.Problem = fmt.Sprintf("%d of %d answers were 2xx/3xx for rejected requests", s.Requests-s.Non2xx3xx, s.Requests)
	case c.Reject && s.UpstreamHits != nil && *s.UpstreamHits != 0:
		s.Problem = fmt.Sprintf("the upstream served %d rejected requests", *s.UpstreamHits)
	case !c.Reject && s.Non2xx3xx > 0:
		s.Problem = fmt.Sprintf("%d of %d answers were not 2xx/3xx", s.Non2xx3xx, s.Requests)
	case open != nil && open.Dropped > 0:
		s.Problem = fmt.Sprintf("%d requests dropped (not sent within %v after the run)", open.Dropped, dropGrace)
	}
	if s.SocketErrors > 0 && s.Problem == "" {
		s.Problem = fmt.Sprintf("%d socket errors", s.SocketErrors)
	}
	extra := ""
	if open != nil {
		extra = fmt.Sprintf("  p99.9 %7.3f ms  max %7.2f ms  late %d", open.P999ms, open.MaxMs, open.Late)
	}
	if s.GCs != nil && s.Requests > 0 {
		extra += fmt.Sprintf("  GC/1k %.2f", float64(*s.GCs)*1000/float64(s.Requests))
	}
	logf("%-22s %-14s round %d: %9.0f req/s  p50 %6.3f ms  p99 %7.3f ms%s %s",
		group, c.Name, round, s.RPS, s.P50ms, s.P99ms, extra, s.Problem)
	return s
}

// selected reports whether -only selects the group.
func (h *harness) selected(group string) bool {
	return h.o.only == "" || strings.Contains(group, h.o.only)
}

// selectsAny reports whether -only selects any of the groups.
func (h *harness) selectsAny(groups []string) bool {
	return slices.ContainsFunc(groups, h.selected)
}

// settledHits waits until the upstream's request count stops moving (the
// proxies may still be finishing requests of the previous case, whose
// clients are gone) and returns it.
func settledHits(base string) int64 {
	if base == "" {
		return 0
	}
	last, _ := upstreamHits(base)
	for range 20 {
		time.Sleep(100 * time.Millisecond)
		n, err := upstreamHits(base)
		if err != nil || n == last {
			break
		}
		last = n
	}
	return last
}

func upstreamHits(base string) (int64, error) {
	if base == "" {
		return 0, errors.New("no upstream")
	}
	resp, err := http.Get(base + "/__bench/hits")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// start runs one of the built binaries.
func (h *harness) start(name, bin string, firstLine bool, args ...string) (*proc, error) {
	path := h.bins[bin]
	if path == "" {
		return nil, fmt.Errorf("%s was not built", bin)
	}
	return startProc(name, path, h.logDir, nil, firstLine, args...)
}

func is2xx(c int) bool { return c >= 200 && c < 300 }

func readLines(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s is empty", path)
	}
	return out, nil
}
