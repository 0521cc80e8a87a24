package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/pgtest"
	"github.com/idp-proxy/idp-proxy/internal/testsupport"
)

// The durability tests run the real binary, kill it with SIGKILL while
// several clients create links, restart it on the same store and check that
// every link answered 201 resolves to its exact URL (DESIGN §6, §8).

// buildBinary compiles ./cmd/shortener into a temporary directory. It builds
// with -race when the test binary does, so that the packages compiled for
// the test are reused from the build cache.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "shortener")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, ".")
	cmd := exec.Command("go", args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// start runs bin on a free loopback port with the given store and waits for
// the "listening" log line of the API listener, which carries its address.
func start(t *testing.T, bin, store string) *testsupport.Process {
	t.Helper()
	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--store", store,
		"--log-format", "json", "--access-log=false", "--metrics-listen", "off")
	cmd.Env = os.Environ()
	return testsupport.StartProcess(t, cmd, "api")
}

// acked is a link the service answered 201 for.
type acked struct{ code, url string }

// hammer creates links from clients goroutines until the process is killed
// after loadFor, and returns every link answered 201. Each URL is unique and
// holds characters that must survive byte for byte.
func hammer(t *testing.T, p *testsupport.Process, clients int, loadFor time.Duration) []acked {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var (
		mu   sync.Mutex
		acks []acked
		wg   sync.WaitGroup
	)
	stop := make(chan struct{})
	for g := range clients {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				u := fmt.Sprintf("https://example.com/d/%d/%d?q=%%C3%%A9&x=a+b#frag-%d", g, i, i)
				resp, err := client.Post(p.Base+"/shorten", "application/json",
					strings.NewReader(`{"url":`+jsonString(u)+`}`))
				if err != nil {
					return // the process was killed
				}
				body, rerr := io.ReadAll(resp.Body)
				resp.Body.Close()
				if rerr != nil {
					return
				}
				if resp.StatusCode != http.StatusCreated {
					t.Errorf("POST /shorten = %d %s", resp.StatusCode, body)
					return
				}
				var out struct {
					ShortCode string `json:"short_code"`
					URL       string `json:"url"`
				}
				if err := json.Unmarshal(body, &out); err != nil || out.ShortCode == "" || out.URL != u {
					t.Errorf("201 body %s (err %v)", body, err)
					return
				}
				mu.Lock()
				acks = append(acks, acked{out.ShortCode, u})
				mu.Unlock()
			}
		})
	}
	time.Sleep(loadFor)
	p.Signal(t, syscall.SIGKILL, 10*time.Second) // while requests are in flight
	close(stop)
	wg.Wait()
	return acks
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// verify checks that every acknowledged link redirects to its exact URL.
func verify(t *testing.T, p *testsupport.Process, acks []acked) {
	t.Helper()
	client := &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	lost := 0
	for _, a := range acks {
		resp, err := client.Get(p.Base + "/" + a.code)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != a.url {
			lost++
			if lost <= 5 {
				t.Errorf("GET /%s = %d Location %q, want 302 %q", a.code, resp.StatusCode, resp.Header.Get("Location"), a.url)
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged links lost or changed after SIGKILL", lost, len(acks))
	}
}

// runDurability is the scenario shared by the stores: two kill/restart
// cycles, then every acknowledged link is checked.
func runDurability(t *testing.T, bin, store string) {
	var all []acked
	for round := range 2 {
		p := start(t, bin, store)
		acks := hammer(t, p, 8, time.Second)
		if len(acks) < 20 {
			t.Fatalf("round %d: only %d links created before the kill; the test proves nothing", round, len(acks))
		}
		all = append(all, acks...)
		t.Logf("round %d: %d links acknowledged before SIGKILL", round, len(acks))
	}
	p := start(t, bin, store)
	verify(t, p, all)
}

func TestDurabilitySIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	bin := buildBinary(t)
	t.Run("bolt", func(t *testing.T) {
		runDurability(t, bin, "bolt:"+filepath.Join(t.TempDir(), "data", "links.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		dsn, _ := pgtest.Schema(t, pgtest.DSN(t, "the PostgreSQL durability test"), "shortener_durability_")
		runDurability(t, bin, dsn)
	})
}
