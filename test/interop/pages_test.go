package interop_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// TestBrowserCustomPages: the real idp-proxy binary with the README's
// example pages (examples/pages: a template, style.css, logo.svg, a name
// and pages.colors), its 401 and 403 pages opened in Chromium. The
// deployment's stylesheet applies (the bar has pages.colors' accent), the
// logo, a data: URI, is decoded, the built-in rules apply too, and the
// browser reports no error (a Content-Security-Policy violation would be
// one) but the documents' own status. The provider is idptest's (its
// tokens only have to pass the proxy's checks; the pages are the test).
func TestBrowserCustomPages(t *testing.T) {
	requireTools(t, needBrowser)
	_, proxyBin := binaries(t)
	srv := idptest.NewServer(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	t.Cleanup(up.Close)
	addr, ops := "127.0.0.1:"+strconv.Itoa(freePort(t)), "127.0.0.1:"+strconv.Itoa(freePort(t))
	cfg := filepath.Join(t.TempDir(), "idp-proxy.yaml")
	y := fmt.Sprintf(`listen: %s
metrics_listen: %s
upstream: {url: %s}
idp:
  server_url: %s
  realm: %s
  client_id: shortener
  include_routes: true
  redirect_uri: http://%s/auth/callback
  session_secret: interop-session-secret-0123456789abcdef
routes:
  - {match: GET /admin/, roles: [admin]}
pages:
  dir: %s
  name: Example Corp
  colors: {accent: "#8e24aa", accent_text: "#fff"}
`, addr, ops, up.URL, srv.URL, srv.Realm, addr, filepath.Join(repoRoot, "examples", "pages"))
	if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(proxyBin, "serve", "--config", cfg)
	cmd.Env = cleanEnv()
	pp := startProc(t, "idp-proxy", cmd)
	waitHTTP(t, pp, "http://"+ops+"/readyz", http.StatusOK)

	bob := srv.Mint(srv.UserClaims("shortener", "bob", "reader"))
	var res struct {
		Visits []struct {
			Status        int      `json:"status"`
			Title         string   `json:"title"`
			Heading       string   `json:"heading"`
			BarColor      string   `json:"barColor"`
			LogoWidth     int      `json:"logoWidth"`
			Styled        bool     `json:"styled"`
			ConsoleErrors []string `json:"consoleErrors"`
		} `json:"visits"`
	}
	target := "http://" + addr + "/admin/"
	runScript(t, "pages.mjs", map[string]any{"chromium": chromiumPath(), "timeoutMs": 20000, "visits": []map[string]any{
		{"url": target},
		{"url": target, "headers": map[string]string{"Authorization": "Bearer " + bob}},
	}}, 60*time.Second, &res)
	if len(res.Visits) != 2 {
		t.Fatalf("%d visits", len(res.Visits))
	}
	for i, want := range []struct {
		status int
		title  string
	}{{401, "Sign-in required · Example Corp"}, {403, "Access denied · Example Corp"}} {
		v := res.Visits[i]
		if v.Status != want.status || v.Title != want.title || v.BarColor != "rgb(142, 36, 170)" || v.LogoWidth != 64 || !v.Styled {
			t.Errorf("the %d page as drawn: %+v, want title %q, the bar in pages.colors' accent, the 64 px logo, the built-in rules", want.status, v, want.title)
		}
		for _, e := range v.ConsoleErrors {
			if !strings.Contains(e, "the server responded with a status of "+strconv.Itoa(want.status)) {
				t.Errorf("the %d page: console error %q", want.status, e)
			}
		}
	}
}
