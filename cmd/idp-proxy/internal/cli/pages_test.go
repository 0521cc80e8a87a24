package cli

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// examplePages copies examples/pages into a directory of the test's.
func examplePages(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pages")
	if err := os.CopyFS(dir, os.DirFS("../../../../examples/pages")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// editFile replaces old with new in path, which must hold old.
func editFile(t *testing.T, path, old, new string) {
	t.Helper()
	b := mustRead(t, path)
	if !strings.Contains(b, old) {
		t.Fatalf("%s lacks %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(b, old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lineOf returns the line number of the first line of path holding s.
func lineOf(t *testing.T, path, s string) int {
	t.Helper()
	for i, l := range strings.Split(mustRead(t, path), "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("%s lacks %q", path, s)
	return 0
}

// check-config loads the example pages, and names the file and line of
// each mistake in a broken copy (the README's "Your own pages" shows this
// output).
func TestCheckConfigPages(t *testing.T) {
	idpSrv := idptest.NewServer(t)
	dir := examplePages(t)
	cfg := writeConfig(t, idpSrv, "http://127.0.0.1:8000", fmt.Sprintf("pages: {dir: %q, name: Example Corp, colors: {accent: \"#8e24aa\"}}\n", dir))
	if out, _, err := run(t, deps{}, "check-config", cfg); err != nil || !strings.Contains(out, "configuration OK") {
		t.Fatalf("the example pages: %v\n%s", err, out)
	}

	html, css := filepath.Join(dir, "error.html"), filepath.Join(dir, "style.css")
	editFile(t, html, "{{- with .User}}", "{{- with .Usr}}")
	f, err := os.OpenFile(css, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(f, "body { background: url(https://cdn.example.com/bg.png) }\n")
	_ = f.Close()
	_, _, err = run(t, deps{}, "check-config", cfg)
	if err == nil {
		t.Fatal("broken pages accepted")
	}
	for _, want := range []string{
		fmt.Sprintf("proxy: pages.dir: %s:%d:11: executing %q at <.Usr>: can't evaluate field Usr", html, lineOf(t, html, ".Usr"), html),
		fmt.Sprintf("proxy: pages.dir: %s:%d: url(https://cdn.example.com/bg.png): the page loads nothing from elsewhere", css, lineOf(t, css, "cdn.example.com")),
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("check-config: %v\nlacks %q", err, want)
		}
	}

	// A logo that is not an image, named with its key and file.
	bad := filepath.Join(t.TempDir(), "logo.png")
	_ = os.WriteFile(bad, []byte("not an image"), 0o644)
	cfg = writeConfig(t, idpSrv, "http://127.0.0.1:8000", fmt.Sprintf("pages: {logo: %q, colors: {text: \"red;}\"}}\n", bad))
	_, _, err = run(t, deps{}, "check-config", cfg)
	for _, want := range []string{"proxy: pages.logo " + bad + ": the logo is not a PNG, JPEG, GIF, WebP or SVG image",
		`proxy: pages.colors.text: "red;}" is not a CSS colour`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("check-config: %v\nlacks %q", err, want)
		}
	}
}

// The real serve with the example pages: browser navigations get Example
// Corp's page for a 401 and a 403, with a policy that allows its style;
// programs get problem+json; a reload reads the files again, and keeps
// the plugin when they did not change.
func TestServePages(t *testing.T) {
	idpSrv := idptest.NewServer(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	t.Cleanup(up.Close)
	dir := examplePages(t)
	path := filepath.Join(t.TempDir(), "proxy.yaml")
	y := fmt.Sprintf(`
listen: 127.0.0.1:0
metrics_listen: 127.0.0.1:0
upstream: {url: %q}
idp:
  server_url: %q
  realm: %s
  client_id: shortener
  include_routes: true
  redirect_uri: http://app.example/auth/callback
  session_secret: %q
routes:
  - {match: GET /admin/, roles: [admin]}
pages:
  dir: %q
  name: Example Corp
  colors: {accent: "#8e24aa"}
log: {level: info}
`, up.URL, idpSrv.URL, idpSrv.Realm, strings.Repeat("k", 40), dir)
	if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServeSignals(t, path)
	bob := idpSrv.Mint(idpSrv.UserClaims("shortener", "bob", "reader"))
	get := func(target, token string, nav bool) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", s.proxy+target, nil)
		if nav {
			req.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
			req.Header.Set("Sec-Fetch-Mode", "navigate")
		} else {
			req.Header.Set("Accept", "application/json")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, c := range []struct {
		token  string
		status int
		want   []string
	}{
		{"", 401, []string{"<title>Sign-in required · Example Corp</title>", "Error 401", `<span class="corp-name">Example Corp</span>`,
			`href="/auth/login?return_to=%2Fadmin%2Fx">Sign in</a>`, "--accent: #8e24aa;", `<img class="corp-logo" src="data:image/svg&#43;xml;base64,`}},
		{bob, 403, []string{"<h1>Access denied</h1>", "You are signed in as <strong>bob</strong>", "Need access? Ask the IT service desk",
			`<a id="home" href="/">Go to the start page</a>`}},
	} {
		resp, body := get("/admin/x", c.token, true)
		if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("navigation: %d %q:\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("the %d page lacks %q:\n%s", c.status, w, body)
			}
		}
		m := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no <style>:\n%s", body)
		}
		sum := sha256.Sum256([]byte(m[1]))
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "style-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"';") {
			t.Errorf("the CSP %q does not allow the page's style", csp)
		}
		resp, body = get("/admin/x", c.token, false)
		if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != "application/problem+json" || strings.Contains(body, "Example Corp") {
			t.Errorf("program: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}

	// A reload with the same files keeps the plugin; a changed template
	// takes over.
	s.sigs <- syscall.SIGHUP
	waitFor(t, "the first reload", func() bool { return strings.Contains(s.logs.String(), `"new_plugin":false`) })
	editFile(t, filepath.Join(dir, "error.html"), "Need access? Ask the IT service desk", "Need access? Open a ticket")
	s.sigs <- syscall.SIGHUP
	waitFor(t, "the changed page", func() bool {
		_, body := get("/admin/x", bob, true)
		return strings.Contains(body, "Need access? Open a ticket")
	})
}
