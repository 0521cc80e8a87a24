package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/shortener/boltstore"
)

// TestDemoFlow runs the demo on free ports and walks the banner's commands:
// a service token from the token endpoint, a link created through the
// proxy, the redirect, a 401 without a token, a browser-style login, and a
// clean stop that leaves the link in the bbolt file.
func TestDemoFlow(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole stack")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan Endpoints, 1)
	done := make(chan error, 1)
	var banner bytes.Buffer
	go func() {
		done <- Run(ctx, Options{
			ProviderAddr: "127.0.0.1:0", ShortenerAddr: "127.0.0.1:0", ProxyAddr: "127.0.0.1:0", OpsAddr: "127.0.0.1:0",
			DataDir: dir, Out: &banner, Ready: func(ep Endpoints) { ready <- ep },
		})
	}()
	var ep Endpoints
	select {
	case ep = <-ready:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("demo not ready after 20s")
	}
	for _, want := range []string{ep.Proxy + "/shorten", ep.TokenURL, "client_id=" + ServiceClientID, ep.Proxy + "/auth/login"} {
		if !strings.Contains(banner.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, banner.String())
		}
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	// 1. Service token, with the form POST the banner shows.
	resp, err := http.PostForm(ep.TokenURL, url.Values{
		"grant_type": {"client_credentials"}, "client_id": {ServiceClientID}, "client_secret": {ServiceClientSecret},
	})
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	decode(t, resp, http.StatusOK, &tok)

	// The README's idp-proxy commands, with the file they name
	// (examples/demo-proxy.yaml), against this demo's provider.
	t.Run("README token and verify", func(t *testing.T) { readmeCommands(t, ep) })

	shorten := func(token, target string) *http.Response {
		req, _ := http.NewRequest("POST", ep.Proxy+"/shorten", strings.NewReader(`{"url":"`+target+`"}`))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// 2. Shorten through the proxy.
	var link struct {
		ShortCode string `json:"short_code"`
		ShortURL  string `json:"short_url"`
	}
	decode(t, shorten(tok.AccessToken, "https://example.com/hello"), http.StatusCreated, &link)
	if link.ShortURL != ep.Proxy+"/"+link.ShortCode {
		t.Errorf("short_url = %q, want it under the proxy %s", link.ShortURL, ep.Proxy)
	}
	// 3. Follow it.
	resp, err = noRedirect.Get(link.ShortURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "https://example.com/hello" {
		t.Fatalf("redirect: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// No token: 401.
	resp = shorten("", "https://example.com/")
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d", resp.StatusCode)
	}

	// Browser-style login: the development provider logs alice in.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, err = browser.Get(ep.Proxy + "/auth/login")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		AccessToken string `json:"access_token"`
		IDToken     string `json:"id_token"`
	}
	decode(t, resp, http.StatusOK, &doc)
	if doc.AccessToken == "" || doc.IDToken == "" {
		t.Fatalf("token document: %+v", doc)
	}
	decode(t, shorten(doc.AccessToken, "https://example.com/alice"), http.StatusCreated, &link)

	// Operations endpoint.
	resp, err = http.Get(ep.Ops + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz: %d", resp.StatusCode)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("demo did not stop")
	}
	st, err := boltstore.Open(filepath.Join(dir, "shortener.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l, err := st.Get(t.Context(), link.ShortCode)
	if err != nil || l.URL != "https://example.com/alice" || l.CreatedBy == "" {
		t.Fatalf("after restart: %+v, %v", l, err)
	}
}

func TestPortInUseNamesTheFlag(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = Run(t.Context(), Options{ProviderAddr: "127.0.0.1:0", ShortenerAddr: "127.0.0.1:0",
		ProxyAddr: ln.Addr().String(), OpsAddr: "127.0.0.1:0", DataDir: "memory:"})
	if err == nil || !strings.Contains(err.Error(), "--proxy-addr") {
		t.Fatalf("err = %v, want one naming --proxy-addr", err)
	}
}

func TestMainBadFlag(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"--no-such-flag"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "no-such-flag") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
}

func decode(t *testing.T, resp *http.Response, status int, v any) {
	t.Helper()
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d: %s", resp.Request.Method, resp.Request.URL, resp.StatusCode, status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("%s: %v: %s", resp.Request.URL, err, body)
	}
}

// readmeCommands runs `idp-proxy token` and `idp-proxy verify --request`
// as the README shows them, with examples/demo-proxy.yaml; only the
// provider's address differs (the demo runs on free ports here).
func readmeCommands(t *testing.T, ep Endpoints) {
	bin := filepath.Join(t.TempDir(), "idp-proxy")
	if out, err := exec.Command("go", "build", "-o", bin, "../idp-proxy").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/idp-proxy: %v\n%s", err, out)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "IDP_PROXY_IDP_SERVER_URL=" + ep.Provider}
	run := func(args ...string) string {
		cmd := exec.Command(bin, args...)
		cmd.Dir = "../.." // the repository root, where the README's commands run
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("idp-proxy %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
		}
		return strings.TrimSpace(string(out))
	}
	token := run("token", "-c", "examples/demo-proxy.yaml")
	out := run("verify", "-c", "examples/demo-proxy.yaml", "--request", "POST /shorten", token)
	if !strings.Contains(out, `"decision": "allowed"`) {
		t.Errorf("verify --request POST /shorten:\n%s", out)
	}
}
