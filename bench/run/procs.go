package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// buildAll compiles the required packages (name → import path relative to
// the module root) with one go command, so that the compiler works on them
// in parallel, then each optional package on its own; an optional package
// that fails to build is reported in missing (with the compiler's message)
// so that the harness runs what it has.
func buildAll(ctx context.Context, root, dir string, required, optional map[string]string) (bins, missing map[string]string, err error) {
	bins, missing = map[string]string{}, map[string]string{}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, nil, err
	}
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, pkg := range required {
		args = append(args, pkg)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("go build: %v\n%s", err, msg)
	}
	for name, pkg := range required {
		bins[name] = filepath.Join(dir, filepath.Base(pkg))
	}
	for name, pkg := range optional {
		out := filepath.Join(dir, name)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			missing[name] = strings.TrimSpace(string(msg))
			logf("build %s (%s): FAILED: %v\n%s", name, pkg, err, msg)
			continue
		}
		bins[name] = out
	}
	return bins, missing, nil
}

// freeAddr returns a loopback address with a port that was free a moment
// ago and that h has not handed out before: the kernel readily gives a
// port that was just closed to the next bind on port 0, so two calls in a
// row could otherwise name the same port for two servers.
func (h *harness) freeAddr() (string, error) {
	h.portsMu.Lock()
	defer h.portsMu.Unlock()
	if h.ports == nil {
		h.ports = map[string]bool{}
	}
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", fmt.Errorf("free port: %w", err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if !h.ports[addr] {
			h.ports[addr] = true
			return addr, nil
		}
	}
	return "", errors.New("free port: none fresh after 100 tries")
}

// proc is a process started by the harness.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	// stdout, when asked for, gets the process's first stdout line.
	firstLine chan string
}

// startProc runs bin with args, its stderr (and stdout unless
// wantFirstLine) appended to logDir/name.log.
func startProc(name, bin, logDir string, env []string, wantFirstLine bool, args ...string) (*proc, error) {
	logPath := filepath.Join(logDir, name+".log")
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = lf
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	var scan *bufio.Scanner
	if wantFirstLine {
		out, err := cmd.StdoutPipe()
		if err != nil {
			lf.Close()
			return nil, err
		}
		scan = bufio.NewScanner(out)
		p.firstLine = make(chan string, 1)
	} else {
		cmd.Stdout = lf
	}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	if scan != nil {
		go func() {
			if scan.Scan() {
				p.firstLine <- scan.Text()
			}
			close(p.firstLine)
			for scan.Scan() {
				fmt.Fprintln(lf, scan.Text())
			}
		}()
	}
	go func() {
		_ = cmd.Wait()
		lf.Close()
		close(p.done)
	}()
	logf("started %s (pid %d): %s %s", name, cmd.Process.Pid, filepath.Base(bin), strings.Join(args, " "))
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop asks the process to end (SIGTERM), then kills it after 10 s.
func (p *proc) stop() {
	if p == nil || p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// tail returns the last lines of the process's log, for error messages.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}

// waitHTTP polls url until ok(status) or the timeout.
func waitHTTP(p *proc, url string, hdr http.Header, ok func(int) bool, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	deadline := time.Now().Add(timeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		if p != nil && p.exited() {
			return fmt.Errorf("%s exited:\n%s", p.name, p.tail())
		}
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		for k, v := range hdr {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if ok(resp.StatusCode) {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	name := "?"
	if p != nil {
		name = p.name
	}
	return fmt.Errorf("%s: %s not ready after %v (last: %s)", name, url, timeout, last)
}

// memStats are a process's memory figures from /proc/<pid>/status, in KiB.
type memStats struct {
	HWM     int64 `json:"peak_rss_kib"`
	RSS     int64 `json:"rss_kib"`
	RssAnon int64 `json:"rss_anon_kib"`
	RssFile int64 `json:"rss_file_kib"`
}

func readMem(pid int) (memStats, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memStats{}, err
	}
	var m memStats
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "VmHWM":
			m.HWM = n
		case "VmRSS":
			m.RSS = n
		case "RssAnon":
			m.RssAnon = n
		case "RssFile":
			m.RssFile = n
		}
	}
	if m.HWM == 0 {
		return m, errors.New("no VmHWM")
	}
	return m, nil
}

// resetPeak resets the process's peak RSS (VmHWM) so that the next reading
// covers only what follows (Linux: clear_refs 5). It is best effort.
// cpuTime returns the CPU time (user + system) process pid has used, from
// /proc/PID/stat (fields 14 and 15, in clock ticks of 1/100 s on Linux).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] { // utime, stime: fields 14 and 15 of the whole line
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / clockTicks), nil
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

func resetPeak(pid int) {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0o200)
}
