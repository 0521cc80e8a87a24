package interop_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Subprocesses of the suites: their output, start, stop and readiness, and free ports.

// logBuffer is a concurrency-safe output sink that also reports its first
// line (the provider's readiness line).
type logBuffer struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	firstLine chan string // buffered(1), gets the first complete line
	sent      bool
}

func newLogBuffer() *logBuffer { return &logBuffer{firstLine: make(chan string, 1)} }

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if !b.sent {
		if line, _, ok := strings.Cut(b.buf.String(), "\n"); ok {
			b.firstLine <- line
			b.sent = true
		}
	}
	return len(p), nil
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// proc is a subprocess stopped (SIGTERM, then SIGKILL) at the end of the
// test; its output is logged when the test fails.
type proc struct {
	name     string
	cmd      *exec.Cmd
	stdout   *logBuffer
	stderr   *logBuffer
	done     chan struct{} // closed when the process has exited
	waitErr  error
	stopOnce sync.Once
}

func startProc(t *testing.T, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{name: name, cmd: cmd, stdout: newLogBuffer(), stderr: newLogBuffer(), done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		out := p.stdout.String() + p.stderr.String()
		if strings.Contains(out, "WARNING: DATA RACE") {
			t.Errorf("%s reported a data race:\n%s", name, tail(out, 8000))
		} else if t.Failed() {
			t.Logf("--- output of %s (%v):\n%s", name, cmd.Args, tail(out, 4000))
		}
	})
	return p
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// stop ends the process gracefully (SIGTERM, then SIGKILL after 10 s) and
// waits for it. Safe to call more than once.
func (p *proc) stop() {
	p.stopOnce.Do(func() {
		select {
		case <-p.done:
			return
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitHTTP polls url until it answers want, failing the test when p exits
// or after 30 s.
func waitHTTP(t *testing.T, p *proc, url string, want int) {
	t.Helper()
	c := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	last := "no answer"
	for time.Now().Before(deadline) {
		if p.exited() {
			t.Fatalf("%s exited before it was ready (%v):\n%s", p.name, p.waitErr, tail(p.stdout.String()+p.stderr.String(), 4000))
		}
		resp, err := c.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == want {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: %s did not answer %d within 30 s (last: %s)", p.name, url, want, last)
}

// handedOut holds every port freePort has returned in this test process:
// the kernel readily gives a port that was just closed to the next bind on
// port 0, so two calls in a row could name the same port for two servers.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freePort returns a port that was free a moment ago on 127.0.0.1 and that
// no earlier call in this process has returned.
func freePort(t *testing.T) int {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		handedOut.Lock()
		seen := handedOut.ports[port]
		handedOut.ports[port] = true
		handedOut.Unlock()
		if !seen {
			return port
		}
	}
	t.Fatal("no fresh free port after 100 tries")
	return 0
}
