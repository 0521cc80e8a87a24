package interop_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// browserResult is what browser/login.mjs prints.
type browserResult struct {
	Steps     []string `json:"steps"`
	LoginPage struct {
		URL   string `json:"url"`
		Title string `json:"title"`
	} `json:"loginPage"`
	Callback struct {
		URL         string        `json:"url"`
		Status      int           `json:"status"`
		ContentType string        `json:"contentType"`
		Document    tokenDocument `json:"document"`
		Shown       bool          `json:"shown"`
	} `json:"callback"`
	Shorten struct {
		Status int `json:"status"`
		Body   struct {
			ShortCode string `json:"short_code"`
			ShortURL  string `json:"short_url"`
			URL       string `json:"url"`
		} `json:"body"`
	} `json:"shorten"`
	Logout struct {
		Status int `json:"status"`
		Body   struct {
			LoggedOut      bool   `json:"logged_out"`
			ProviderLogout string `json:"provider_logout"`
		} `json:"body"`
	} `json:"logout"`
}

// TestBrowserLoginFlow logs in with a real headless Chromium: /auth/login on
// the proxy, the provider's own login page, the callback's token document,
// then POST /shorten and POST /auth/logout from the page.
func TestBrowserLoginFlow(t *testing.T) {
	t.Parallel()
	requireTools(t, needProvider|needBrowser)
	proxyPort := freePort(t)
	p := startProvider(t, providerOptions{
		RedirectURIs: []string{"http://127.0.0.1:" + strconv.Itoa(proxyPort) + "/auth/callback"},
	})
	s := startStack(t, realmYAML(p.ServerURL()), proxyPort, true)

	const target = "https://example.com/from-the-browser?x=1"
	arg, err := json.Marshal(map[string]any{
		"proxy":     s.Proxy,
		"username":  "alice",
		"password":  "alice-password",
		"url":       target,
		"chromium":  chromiumPath(),
		"timeoutMs": 30000,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("browser", "login.mjs"), string(arg))
	cmd.Dir = filepath.Join(repoRoot, "test", "interop")
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("browser run failed: %v\n%s", err, tail(stderr.String(), 6000))
	}
	t.Logf("browser: %s", strings.TrimSpace(stderr.String()))
	var res browserResult
	if err := json.Unmarshal(stdout, &res); err != nil {
		t.Fatalf("browser output %q: %v", stdout, err)
	}

	if !strings.HasPrefix(res.LoginPage.URL, p.Issuer+"/login-actions/authenticate/") {
		t.Errorf("login page at %s, want the provider's (%s)", res.LoginPage.URL, p.Issuer)
	}
	cb := res.Callback
	if cb.Status != http.StatusOK || !strings.HasPrefix(cb.URL, s.Proxy+"/auth/callback?") ||
		!strings.HasPrefix(cb.ContentType, "application/json") || !cb.Shown {
		t.Fatalf("callback: %+v", cb)
	}
	checkTokenDocument(t, cb.Document, "alice")

	if res.Shorten.Status != http.StatusCreated || res.Shorten.Body.URL != target ||
		res.Shorten.Body.ShortURL != s.Proxy+"/"+res.Shorten.Body.ShortCode {
		t.Fatalf("POST /shorten from the browser: %+v", res.Shorten)
	}
	if a := call(t, "GET", res.Shorten.Body.ShortURL, "", nil); a.Status != http.StatusFound || a.Header.Get("Location") != target {
		t.Fatalf("GET %s: %s", res.Shorten.Body.ShortURL, a)
	}
	// The browser's token works for any client until it expires.
	created(t, call(t, "POST", s.Proxy+"/shorten", cb.Document.AccessToken, map[string]string{"url": target}))

	if res.Logout.Status != http.StatusOK || !res.Logout.Body.LoggedOut || res.Logout.Body.ProviderLogout != "done" {
		t.Fatalf("POST /auth/logout from the browser: %+v", res.Logout)
	}
	if a := call(t, "POST", s.Proxy+"/auth/refresh", "", map[string]string{"refresh_token": cb.Document.RefreshToken}); a.Status != http.StatusUnauthorized {
		t.Fatalf("refresh after the browser's logout: want 401, got %s", a)
	}
	s.checkNoTokensLogged(t, cb.Document.AccessToken, cb.Document.RefreshToken, cb.Document.IDToken)
}
