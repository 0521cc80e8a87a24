package testsupport

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Process is one of the repository's binaries started by a test, which
// reports each listener's address in a JSON log line on stderr
// ({"msg":"listening","server":NAME,"addr":ADDR}), as cmd/idp-proxy and
// cmd/shortener do.
type Process struct {
	// Base is "http://" and the address of the listener StartProcess
	// waited for.
	Base string

	cmd  *exec.Cmd
	logs lineLog
	done chan struct{}
}

// StartProcess starts cmd and waits (at most 30 s) for the "listening"
// line of its listener named server. The process is killed when the test
// ends.
func StartProcess(t testing.TB, cmd *exec.Cmd, server string) *Process {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.logs.add(sc.Text())
			var rec struct{ Msg, Server, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "listening" && rec.Server == server {
				select {
				case addrc <- rec.Addr:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	select {
	case a := <-addrc:
		p.Base = "http://" + a
	case <-p.done:
		t.Fatalf("%s exited before listening:\n%s", cmd.Path, p.Logs())
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not report its address:\n%s", cmd.Path, p.Logs())
	}
	return p
}

// Signal sends sig and waits at most within for the process to exit.
func (p *Process) Signal(t testing.TB, sig os.Signal, within time.Duration) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(within):
		t.Fatalf("still running %v after %v:\n%s", within, sig, p.Logs())
	}
}

// Logs returns the first 64 KiB of the process's log lines.
func (p *Process) Logs() string { return p.logs.String() }

// lineLog keeps the first 64 KiB of a process's log lines; safe for the
// reading goroutine and the test.
type lineLog struct {
	mu sync.Mutex
	sb strings.Builder
}

func (l *lineLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sb.Len() < 64<<10 {
		l.sb.WriteString(line)
		l.sb.WriteByte('\n')
	}
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sb.String()
}
