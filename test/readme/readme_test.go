package readme

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// goBlocks returns the README's fenced Go blocks, in order.
func goBlocks(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	rest := string(b)
	for {
		_, after, ok := strings.Cut(rest, "\n```go\n")
		if !ok {
			return blocks
		}
		block, tail, ok := strings.Cut(after, "\n```")
		if !ok {
			t.Fatal("README.md: a Go block is not closed")
		}
		blocks = append(blocks, block+"\n")
		rest = tail
	}
}

// build builds each source as a main package inside this module (under
// test/readme/snippet_N, through go build -overlay, so that nothing is
// written into the tree) and returns the binaries' paths.
func build(t *testing.T, sources ...string) []string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	overlay := map[string]map[string]string{"Replace": {}}
	var pkgs, bins []string
	for i, src := range sources {
		name := fmt.Sprintf("snippet_%d", i+1)
		file := filepath.Join(dir, name+".go")
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		overlay["Replace"][filepath.Join(root, "test", "readme", name, "main.go")] = file
		pkgs = append(pkgs, "./test/readme/"+name)
		bins = append(bins, filepath.Join(dir, "bin", name))
	}
	ov, _ := json.Marshal(overlay)
	ovFile := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ovFile, ov, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", append([]string{"build", "-overlay", ovFile, "-o", filepath.Join(dir, "bin") + "/"}, pkgs...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build of the README's Go blocks: %v\n%s", err, out)
	}
	return bins
}

// Every Go block of the README is a complete program that builds, as
// written.
func TestGoBlocksBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs")
	}
	blocks := goBlocks(t)
	if len(blocks) == 0 {
		t.Fatal("README.md has no Go block")
	}
	for i, b := range blocks {
		if !strings.HasPrefix(b, "package main\n") {
			t.Errorf("Go block %d does not start with \"package main\": a fragment cannot be run as written:\n%.200s", i+1, b)
		}
	}
	if t.Failed() {
		return
	}
	build(t, blocks...)
}

// The pkg/idp example ("Protect a net/http handler") serves GET /me to a
// valid token of its provider and 401 without one; when its port is
// taken, it exits non-zero saying why, instead of exiting 0 in silence.
func TestProtectExampleRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a program")
	}
	blocks := goBlocks(t)
	var example string
	for _, b := range blocks {
		if strings.Contains(b, `p.WithUser(`) {
			example = b
			break
		}
	}
	if example == "" {
		t.Fatal("README.md has no Go block with the p.WithUser example")
	}
	const providerAddr, listenAddr = "127.0.0.1:8080", "127.0.0.1:3000"
	if !strings.Contains(example, `"http://`+providerAddr+`"`) || !strings.Contains(example, `"`+listenAddr+`"`) {
		t.Fatalf("the example no longer names %s (the demo's provider) and %s", providerAddr, listenAddr)
	}
	// The same program on free ports, against a test provider.
	provider := idptest.NewServer(t, idptest.Options{Realm: "demo"})
	free := freeAddr(t)
	moved := strings.ReplaceAll(example, "http://"+providerAddr, provider.URL)
	moved = strings.ReplaceAll(moved, listenAddr, free)
	bins := build(t, example, moved)

	// The port taken: a non-zero exit naming the reason, at once.
	if ln, err := net.Listen("tcp", listenAddr); err == nil {
		defer ln.Close()
	} // else something else holds it: taken all the same
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bins[0])
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 || !strings.Contains(stderr.String(), "address already in use") {
		t.Errorf("with %s taken the example ended with %v, stderr %q; want a non-zero exit naming the taken address", listenAddr, err, stderr.String())
	}

	// Serving: hello alice with her token, 401 without.
	run := exec.Command(bins[1])
	run.Stderr = os.Stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = run.Process.Kill(); _ = run.Wait() })
	token := provider.Mint(provider.UserClaims("shortener", "alice"))
	deadline := time.Now().Add(20 * time.Second)
	for {
		req, _ := http.NewRequest("GET", "http://"+free+"/me", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.TrimSpace(string(body)) == "hello alice" {
				break
			}
			if resp.StatusCode != http.StatusServiceUnavailable { // keys not loaded yet
				t.Fatalf("GET /me with alice's token: %d %s", resp.StatusCode, body)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /me never answered hello alice: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := http.Get("http://" + free + "/me")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /me without a token: %d, want 401", resp.StatusCode)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
