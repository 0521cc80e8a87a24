package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/idp-proxy/idp-proxy/pkg/proxy"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/boltstore"
)

// startDemo runs the demo on free ports until the test ends and returns
// its endpoints, the banner, and stop (which cancels Run and waits for it).
func startDemo(t *testing.T, o Options) (Endpoints, *bytes.Buffer, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan Endpoints, 1)
	done := make(chan error, 1)
	var banner bytes.Buffer
	o.ProviderAddr, o.ShortenerAddr, o.ProxyAddr, o.OpsAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	o.Out, o.Ready = &banner, func(ep Endpoints) { ready <- ep }
	go func() { done <- Run(ctx, o) }()
	var ep Endpoints
	select {
	case ep = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("Run: %v", err)
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatal("demo not ready after 20s")
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Run after cancel: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("demo did not stop")
		}
	}
	t.Cleanup(stop)
	return ep, &banner, stop
}

// TestDemoFlow runs the demo on free ports and walks the banner's commands:
// a service token from the token endpoint, a link created through the
// proxy, the redirect, a 401 without a token; then a browser opening the
// proxy's / (sign-in through the development provider and back to the
// shortener's page, a link created with the session, sign-out), and a
// clean stop that leaves the link in the bbolt file.
func TestDemoFlow(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole stack")
	}
	dir := t.TempDir()
	seen := &upstreamLog{}
	ep, banner, stop := startDemo(t, Options{DataDir: dir, seenByShortener: seen.record})
	for _, want := range []string{ep.Proxy + "/shorten", ep.TokenURL, "client_id=" + ServiceClientID, "open " + ep.Proxy + "/ ", ep.Proxy + "/auth/logout", "issuer " + ep.Proxy + assertionPath} {
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
	// The shortener received the proxy's assertion for it, never the
	// caller's token; reached directly, it refuses forged identity headers
	// and the caller's token presented as the assertion.
	seen.check(t, ep, tok.AccessToken)
	checkShortenerRefusesForgeries(t, ep, tok.AccessToken)
	// No token: 401.
	resp = shorten("", "https://example.com/")
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d", resp.StatusCode)
	}

	// A browser opens the proxy's /: sent to the sign-in, signed in by the
	// development provider, brought back to the shortener's page.
	br := newBrowser(t)
	resp = br.navigate(t, ep.Proxy+"/")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.String() != ep.Proxy+"/" ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("open %s/: %d %s at %s:\n%.300s", ep.Proxy, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Request.URL, body)
	}
	if want := []string{"/auth/login", "/realms/" + Realm + "/protocol/openid-connect/auth", "/auth/callback", "/"}; !slices.Equal(br.hops, want) {
		t.Errorf("sign-in redirects %v, want %v", br.hops, want)
	}
	if !br.hasCookie(ep.Proxy, "idp_session") {
		t.Fatal("no session cookie after the sign-in")
	}
	if a := br.get(t, ep.Proxy+"/assets/app.js"); a != http.StatusOK {
		t.Errorf("GET /assets/app.js with the session: %d", a)
	}
	// The session works for the page's API calls as well.
	req, _ := http.NewRequest("POST", ep.Proxy+"/shorten", strings.NewReader(`{"url":"https://example.com/alice"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err = br.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	decode(t, resp, http.StatusCreated, &link)
	// Without a session the page and its assets are refused (401: not
	// navigations), and short links stay public.
	for _, path := range []string{"/", "/assets/app.js"} {
		resp, err := http.Get(ep.Proxy + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a session: %d, want 401", path, resp.StatusCode)
		}
	}
	if resp, err := noRedirect.Get(link.ShortURL); err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("GET %s without a session: %v %v", link.ShortURL, resp, err)
	} else {
		resp.Body.Close()
	}
	// The page says who is signed in and offers the sign-out: GET /links
	// names alice, the page links to /auth/logout.
	resp, err = br.c.Get(ep.Proxy + "/links")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		User struct{ ID, Name string } `json:"user"`
	}
	decode(t, resp, http.StatusOK, &list)
	if list.User.Name != "alice" || list.User.ID == "" {
		t.Errorf("GET /links user = %+v, want alice", list.User)
	}
	resp = br.navigate(t, ep.Proxy+"/")
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `href="/auth/logout"`) || !strings.Contains(string(body), "Signed in as") {
		t.Errorf("the page has no sign-out link or no 'Signed in as':\n%s", body)
	}
	// The page's custom-code field is there (custom codes are on), and
	// the README's /links example with a short_code works.
	if !strings.Contains(string(body), `id="short_code"`) {
		t.Error("the page lacks the custom code field")
	}
	req, _ = http.NewRequest("POST", ep.Proxy+"/links", strings.NewReader(`{"url":"https://example.com/launch","short_code":"launch","max_visits":100}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err = br.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var launch struct {
		ShortCode string `json:"short_code"`
	}
	decode(t, resp, http.StatusCreated, &launch)
	if launch.ShortCode != "launch" {
		t.Errorf("POST /links with short_code launch created %q", launch.ShortCode)
	}
	// Sign-out: through the provider's end-session endpoint, back to the
	// shortener's public /signed-out page (not the provider's bare "You
	// are logged out."); afterwards the page sends the browser to the
	// sign-in again.
	resp = br.navigate(t, ep.Proxy+"/auth/logout")
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "You are signed out") ||
		resp.Request.URL.String() != ep.Proxy+"/signed-out" ||
		!slices.Contains(br.hops, "/realms/"+Realm+"/protocol/openid-connect/logout") {
		t.Errorf("sign-out ended at %s (%d) after %v: %s", resp.Request.URL, resp.StatusCode, br.hops, body)
	}
	if br.hasCookie(ep.Proxy, "idp_session") {
		t.Error("the session cookie survived the sign-out")
	}
	// The signed-out page's stylesheet loads without a session.
	req, _ = http.NewRequest("GET", ep.Proxy+"/assets/app.css", nil)
	req.Header.Set("Accept", "text/css,*/*;q=0.1")
	req.Header.Set("Sec-Fetch-Mode", "no-cors")
	if resp, err = br.c.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/css") {
		t.Errorf("after the sign-out GET /assets/app.css answered %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	req, _ = http.NewRequest("GET", ep.Proxy+"/", nil)
	req.Header.Set("Accept", "text/html")
	resp, err = (&http.Client{Jar: br.c.Jar, CheckRedirect: noRedirect.CheckRedirect}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || loc != "/auth/login?return_to=%2F" {
		t.Errorf("after the sign-out GET / answered %d %q, want 302 to the sign-in", resp.StatusCode, loc)
	}

	// Operations endpoint.
	resp, err = http.Get(ep.Ops + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz: %d", resp.StatusCode)
	}

	// A visit just before the stop (within the shortener's 1 s flush
	// interval) is written by the shutdown, not lost.
	resp, err = noRedirect.Get(link.ShortURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("GET %s: %d, want 302", link.ShortURL, resp.StatusCode)
	}

	stop()
	st, err := boltstore.Open(filepath.Join(dir, "shortener.db"), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l, err := st.Get(t.Context(), link.ShortCode)
	if err != nil || l.URL != "https://example.com/alice" || l.CreatedBy == "" {
		t.Fatalf("after restart: %+v, %v", l, err)
	}
	if l.Visits != 2 { // the redirect without a session above, and the one just before the stop
		t.Errorf("after restart the link has %d visits, want 2 (the last one made just before the stop)", l.Visits)
	}
}

// TestDemoAPIMode: with -sessions=false the login callback answers the
// token document (README, "Login routes") and a browser gets 401.
func TestDemoAPIMode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole stack")
	}
	ep, banner, _ := startDemo(t, Options{DataDir: "memory:", NoSessions: true})
	if !strings.Contains(banner.String(), "open "+ep.Proxy+"/auth/login") {
		t.Errorf("banner lacks the login route:\n%s", banner)
	}
	jar, _ := cookiejar.New(nil)
	resp, err := (&http.Client{Jar: jar}).Get(ep.Proxy + "/auth/login")
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
	br := newBrowser(t)
	resp = br.navigate(t, ep.Proxy+"/")
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || len(br.hops) != 0 {
		t.Fatalf("a browser without sessions: %d after %v, want 401 at once", resp.StatusCode, br.hops)
	}
}

// browser is an HTTP client that behaves like a browser navigating: a
// cookie jar, Accept: text/html on every request, redirects followed and
// recorded (their paths).
type browser struct {
	c    *http.Client
	hops []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &browser{}
	b.c = &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if len(via) > 10 {
			return errors.New("too many redirects")
		}
		b.hops = append(b.hops, r.URL.Path)
		return nil
	}}
	return b
}

// navigate GETs url as a browser's navigation and follows the redirects.
func (b *browser) navigate(t *testing.T, target string) *http.Response {
	t.Helper()
	b.hops = nil
	req, _ := http.NewRequest("GET", target, nil)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
	req.Header.Set("Sec-Fetch-Mode", "navigate")
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	return resp
}

// get GETs url as a page's subresource and returns the status.
func (b *browser) get(t *testing.T, target string) int {
	t.Helper()
	resp, err := b.c.Get(target)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (b *browser) hasCookie(base, name string) bool {
	u, _ := url.Parse(base)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == name {
			return true
		}
	}
	return false
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
	// The page needs any valid token.
	if out := run("verify", "-c", "examples/demo-proxy.yaml", "--request", "GET /", token); !strings.Contains(out, `"decision": "allowed"`) {
		t.Errorf("verify --request GET /:\n%s", out)
	}
}

// The example file the README's commands use has the demo's rules.
func TestExampleFileHasTheDemoRules(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "demo-proxy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Routes []proxy.RouteConfig `yaml:"routes"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.Routes, Routes()) {
		t.Errorf("examples/demo-proxy.yaml routes %+v\nthe demo's %+v", f.Routes, Routes())
	}
}
