package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// --help is a successful answer (usage on stdout, exit 0), as in
// idp-proxy and the shortener; -v and --version print the version, as
// there; --verbose is the log switch.
func TestMainHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"token", "--help"}} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 0 || !strings.Contains(out.String(), "Usage: idp-demo") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
	}
	for _, args := range [][]string{{"-v"}, {"--version"}} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "idp-demo ") || strings.Count(out.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"--help"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "-verbose") {
		t.Errorf("--help does not list --verbose: %q", out.String())
	}
	if code := run([]string{"serve"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), `"serve"`) {
		t.Errorf("an unknown argument: exit %d, stderr %q", code, errOut.String())
	}
}

// `idp-demo token alice` prints alice's access token from a running
// demo, and the proxy accepts it for the page's API (she is a creator).
func TestTokenCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole stack")
	}
	ep, _, _ := startDemo(t, Options{DataDir: "memory:"})
	provider := strings.TrimPrefix(ep.Provider, "http://")
	proxyAddr := strings.TrimPrefix(ep.Proxy, "http://")
	var out, errOut bytes.Buffer
	if code := run([]string{"token", "--provider-addr", provider, "--proxy-addr", proxyAddr, "alice"}, &out, &errOut); code != 0 {
		t.Fatalf("token alice: exit %d: %s", code, errOut.String())
	}
	tok := strings.TrimSpace(out.String())
	if strings.Count(out.String(), "\n") != 1 || strings.Count(tok, ".") != 2 {
		t.Fatalf("token alice printed %q, want one JWT on one line", out.String())
	}
	req, _ := http.NewRequest("POST", ep.Proxy+"/shorten", strings.NewReader(`{"url":"https://example.com/alice"}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("POST /shorten with alice's token: %d", resp.StatusCode)
	}

	out.Reset()
	errOut.Reset()
	if code := run([]string{"token", "--provider-addr", provider, "--proxy-addr", proxyAddr, "bob"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "alice") || out.Len() != 0 {
		t.Errorf("token bob: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := ln.Addr().String()
	ln.Close()
	errOut.Reset()
	if code := run([]string{"token", "--provider-addr", free}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "make demo") {
		t.Errorf("token without a running demo: exit %d, stderr %q", code, errOut.String())
	}
}

// `make demo &` then `kill $!` stops the demo: make forwards SIGTERM to
// its recipe's process, which must be the demo itself, not a shell that
// dies and leaves the demo running with its ports bound.
func TestMakeDemoStopsOnSIGTERMToMake(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the demo through make")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	shell, err := filepath.Abs("testdata/plain-sh")
	if err != nil {
		t.Fatal(err)
	}
	// A shell that does not exec the recipe's last command by itself (as
	// dash and bash 5.1 do), so that only the recipe can make it so.
	cmd := exec.Command("make", "-C", "../..", "--no-print-directory", "demo", "SHELL="+shell,
		"DEMO_FLAGS=--provider-addr 127.0.0.1:0 --shortener-addr 127.0.0.1:0 --proxy-addr 127.0.0.1:0 --ops-addr 127.0.0.1:0 --data-dir memory:")
	cmd.Env = append(os.Environ(), "MAKEFLAGS=")
	// Its own process group, so that the cleanup can stop whatever is
	// left without touching other processes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	proxyLine := regexp.MustCompile(`idp-proxy\s+http://(127\.0\.0\.1:\d+)`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := proxyLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var addr string
	select {
	case addr = <-found:
	case <-time.After(2 * time.Minute):
		t.Fatal("make demo printed no banner within 2 minutes")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil { // kill $!
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("make did not exit after SIGTERM")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return // the port is free: the demo stopped
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("10 s after make exited, the demo still serves on %s", addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The README's /links example ("as alice, against `make demo`") runs as
// written against the demo: every command succeeds, custom code
// included; only the proxy's port and the token command's flags differ.
func TestReadmeLinksExample(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole stack")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "```sh\n# as alice, against `make demo`"
	_, block, ok := strings.Cut(string(readme), marker)
	if !ok {
		t.Fatalf("README.md has no block starting %q", marker)
	}
	block, _, _ = strings.Cut(block, "```")
	block = "#" + block // the rest of the marker's comment line
	ep, _, _ := startDemo(t, Options{DataDir: "memory:"})
	demo := filepath.Join(t.TempDir(), "idp-demo")
	if out, err := exec.Command("go", "build", "-o", demo, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	proxyAddr := strings.TrimPrefix(ep.Proxy, "http://")
	script := strings.ReplaceAll(block, "127.0.0.1:4180", proxyAddr)
	script = strings.ReplaceAll(script, "bin/idp-demo token alice",
		demo+" token --provider-addr "+strings.TrimPrefix(ep.Provider, "http://")+" --proxy-addr "+proxyAddr+" alice")
	// Each curl prints its status on a line of its own.
	script = strings.ReplaceAll(script, "curl -s", `curl -s -w '\nstatus=%{http_code}\n'`)
	cmd := exec.Command("sh", "-e", "-c", script)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's /links example: %v\n%s", err, out)
	}
	statuses := regexp.MustCompile(`status=(\d+)`).FindAllStringSubmatch(string(out), -1)
	if want := strings.Count(block, "curl -s"); len(statuses) != want {
		t.Fatalf("%d commands answered, want %d:\n%s", len(statuses), want, out)
	}
	for i, s := range statuses {
		if s[1][0] != '2' {
			t.Errorf("command %d answered %s:\n%s", i+1, s[1], out)
		}
	}
}
