package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// load is one wrk invocation.
type load struct {
	URL     string   // base URL, path included for static requests
	Conns   int      // concurrent connections
	Headers []string // "Name: value", for static requests
	Script  string   // Lua script, or ""
	Args    []string // script arguments (after --)
}

// wrkResult holds wrk's figures for one run.
type wrkResult struct {
	RPS          float64 `json:"rps"`
	P50ms        float64 `json:"p50_ms"`
	P75ms        float64 `json:"p75_ms"`
	P90ms        float64 `json:"p90_ms"`
	P99ms        float64 `json:"p99_ms"`
	Requests     int64   `json:"requests"`
	Non2xx3xx    int64   `json:"non_2xx_3xx"`
	SocketErrors int64   `json:"socket_errors"`
	Command      string  `json:"command"`
}

// wrkThreads is wrk's -t for conns connections.
func wrkThreads(conns int) int { return min(2, conns) }

// args returns wrk's command line for l.
func (l load) args(d time.Duration) []string {
	a := []string{"-t", strconv.Itoa(wrkThreads(l.Conns)), "-c", strconv.Itoa(l.Conns),
		"-d", fmt.Sprintf("%ds", max(1, int(d.Seconds()))), "--latency", "--timeout", "5s"}
	for _, h := range l.Headers {
		a = append(a, "-H", h)
	}
	if l.Script != "" {
		a = append(a, "-s", l.Script)
	}
	a = append(a, l.URL)
	if len(l.Args) > 0 {
		a = append(append(a, "--"), l.Args...)
	}
	return a
}

// runWrk runs wrk for d and parses its report.
func runWrk(ctx context.Context, l load, d time.Duration) (wrkResult, error) {
	args := l.args(d)
	cmd := exec.CommandContext(ctx, "wrk", args...)
	out, err := cmd.CombinedOutput()
	res := wrkResult{Command: "wrk " + shellJoin(args)}
	if err != nil {
		return res, fmt.Errorf("wrk: %v\n%s", err, out)
	}
	if err := parseWrk(string(out), &res); err != nil {
		return res, fmt.Errorf("%w\n%s", err, out)
	}
	return res, nil
}

var (
	reRPS     = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	reLat     = regexp.MustCompile(`(?m)^\s+(50|75|90|99)%\s+([0-9.]+)(us|ms|s)\s*$`)
	reReqs    = regexp.MustCompile(`(?m)^\s+(\d+) requests in`)
	reNon     = regexp.MustCompile(`Non-2xx or 3xx responses:\s+(\d+)`)
	reSockErr = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

func parseWrk(out string, r *wrkResult) error {
	m := reRPS.FindStringSubmatch(out)
	if m == nil {
		return fmt.Errorf("wrk: no Requests/sec in the output")
	}
	r.RPS, _ = strconv.ParseFloat(m[1], 64)
	for _, lm := range reLat.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(lm[2], 64)
		switch lm[3] {
		case "us":
			v /= 1000
		case "s":
			v *= 1000
		}
		switch lm[1] {
		case "50":
			r.P50ms = v
		case "75":
			r.P75ms = v
		case "90":
			r.P90ms = v
		case "99":
			r.P99ms = v
		}
	}
	if m := reReqs.FindStringSubmatch(out); m != nil {
		r.Requests, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := reNon.FindStringSubmatch(out); m != nil {
		r.Non2xx3xx, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := reSockErr.FindStringSubmatch(out); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.ParseInt(s, 10, 64)
			r.SocketErrors += n
		}
	}
	return nil
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'$*?;&|<>(){}") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

// writeRequests writes a request list for bench/lua/rotate.lua: one
// "PATH [TOKEN]" per line.
func writeRequests(dir, name string, paths, tokens []string) (string, error) {
	var b strings.Builder
	for i, p := range paths {
		b.WriteString(p)
		if tokens != nil {
			b.WriteByte(' ')
			b.WriteString(tokens[i%len(tokens)])
		}
		b.WriteByte('\n')
	}
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

func wrkVersion() string {
	out, _ := exec.Command("wrk", "-v").CombinedOutput()
	line, _, _ := strings.Cut(string(out), "\n")
	line = strings.TrimSpace(line)
	if i := strings.Index(line, " Copyright"); i > 0 {
		line = line[:i]
	}
	return line
}
