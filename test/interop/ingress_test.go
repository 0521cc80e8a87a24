package interop_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/testneed"
)

// Forward-auth behind real ingresses: Debian's nginx (auth_request) and
// Caddy (forward_auth), each started on loopback with the configuration
// shipped in deploy/ingress (addresses rewritten to free ports), in front
// of the real shortener, with idp-proxy in forward-auth-only mode as the
// auth service and the OpenID-certified provider for tokens.

// ingressBin finds an ingress binary; in CI (.ci/setup installs nginx and
// caddy) a missing one fails the test, elsewhere it skips.
func ingressBin(t *testing.T, name string) string {
	t.Helper()
	for _, p := range []string{"/usr/sbin/" + name, "/usr/bin/" + name} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	testneed.Skip(t, testneed.EndToEnd, "%s is not installed (apt-get install nginx caddy; .ci/setup installs it): ingress test skipped", name)
	return ""
}

// ingressPorts are the loopback addresses of one ingress setup; the
// shipped files use 127.0.0.1:8080, :4180, :4181 and :8000.
type ingressPorts struct {
	front, login, verify, app string
}

func (p ingressPorts) rewrite(s string) string {
	return strings.NewReplacer(
		"127.0.0.1:8080", p.front, "127.0.0.1:4180", p.login,
		"127.0.0.1:4181", p.verify, "127.0.0.1:8000", p.app,
	).Replace(s)
}

func shipped(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "ingress", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// startForwardAuth runs idp-proxy from deploy/ingress's forward-auth
// configuration, pointed at the provider, with the ingress's callback.
func startForwardAuth(t *testing.T, p *provider, ports ingressPorts) *proc {
	t.Helper()
	_, bin := binaries(t)
	cfg := ports.rewrite(shipped(t, "idp-proxy-forward-auth.yaml"))
	cfg = strings.NewReplacer(
		"server_url: http://keycloak:8080", "server_url: "+p.ServerURL(),
		"metrics_listen: 127.0.0.1:9180", "metrics_listen: 127.0.0.1:"+strconv.Itoa(freePort(t)),
		"key_file: assertion-keys.pem", "key_file: "+filepath.Join(t.TempDir(), "assertion-keys.pem"),
		// A public route on which the shortener itself reads the identity
		// headers: a spoofed one that got through would be believed.
		"routes:\n", "routes:\n  - match: GET /links/{code}\n    public: true\n",
	).Replace(cfg)
	path := filepath.Join(t.TempDir(), "idp-proxy.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--config", path)
	cmd.Env = append(cleanEnv(),
		"IDP_PROXY_IDP_CLIENT_SECRET="+clientSecret,
		"IDP_PROXY_IDP_SESSION_SECRET=interop-session-secret-0123456789abcdef",
		"IDP_PROXY_LOG_FORMAT=json")
	px := startProc(t, "idp-proxy (forward-auth)", cmd)
	waitVerdict(t, px, "http://"+ports.verify+"/auth/verify")
	return px
}

// waitVerdict waits until the verify endpoint answers with the keys
// loaded (200 for a public original request).
func waitVerdict(t *testing.T, p *proc, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if p.exited() {
			t.Fatalf("%s exited", p.name)
		}
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("X-Original-URI", "/health")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: no verdict from %s", p.name, url)
}

// rawGet sends a request line exactly as written (Go's client would clean
// "/a/../b") and returns the status.
func rawGet(t *testing.T, hostport, method, target string, hdr map[string]string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", hostport, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", method, target, hostport)
	for k, v := range hdr {
		fmt.Fprintf(c, "%s: %s\r\n", k, v)
	}
	if method == http.MethodPost {
		fmt.Fprint(c, "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
	} else {
		fmt.Fprint(c, "\r\n")
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	resp.Body.Close()
	t.Logf("%s %s → %d %s", method, target, resp.StatusCode, strings.TrimSpace(string(body)))
	return resp.StatusCode
}

func TestIngressForwardAuth(t *testing.T) {
	requireTools(t, needProvider|needBrowser)
	nginxBin := ingressBin(t, "nginx")
	caddyBin := ingressBin(t, "caddy")
	port := func() string { return "127.0.0.1:" + strconv.Itoa(freePort(t)) }
	nginxPorts := ingressPorts{front: port(), login: port(), verify: port()}
	caddyPorts := ingressPorts{front: port(), login: port(), verify: port()}
	p := startProvider(t, providerOptions{RedirectURIs: []string{
		"http://" + nginxPorts.front + "/auth/callback", "http://" + caddyPorts.front + "/auth/callback", unusedRedirect,
	}})
	app, _ := startShortener(t, "--trust-identity-headers", "--page")
	nginxPorts.app = strings.TrimPrefix(app, "http://")
	caddyPorts.app = nginxPorts.app
	startForwardAuth(t, p, nginxPorts)
	startForwardAuth(t, p, caddyPorts)

	// nginx, from the shipped file.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(nginxPorts.rewrite(shipped(t, "nginx.conf"))), 0o644); err != nil {
		t.Fatal(err)
	}
	global := "daemon off;"
	if os.Geteuid() == 0 {
		global += " user root;" // workers must read the test's private temp dir
	}
	ng := startProc(t, "nginx", exec.Command(nginxBin, "-p", dir, "-c", conf, "-g", global))
	waitHTTP(t, ng, "http://"+nginxPorts.front+"/health", http.StatusOK)

	// Caddy, from the shipped file.
	caddyfile := filepath.Join(t.TempDir(), "Caddyfile")
	if err := os.WriteFile(caddyfile, []byte(caddyPorts.rewrite(shipped(t, "Caddyfile"))), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(caddyBin, "run", "--config", caddyfile, "--adapter", "caddyfile")
	home := t.TempDir()
	cmd.Env = append(cleanEnv(), "HOME="+home, "XDG_DATA_HOME="+home, "XDG_CONFIG_HOME="+home)
	cd := startProc(t, "caddy", cmd)
	waitHTTP(t, cd, "http://"+caddyPorts.front+"/health", http.StatusOK)

	alice := userToken(t, p, unusedRedirect, "alice", "alice-password").AccessToken
	aliceSub, _ := claims(t, alice)["sub"].(string)
	bob := userToken(t, p, unusedRedirect, "bob", "bob-password").AccessToken
	for name, ports := range map[string]ingressPorts{"nginx": nginxPorts, "caddy": caddyPorts} {
		t.Run(name, func(t *testing.T) {
			base := "http://" + ports.front
			if a := call(t, "GET", base+"/health", "", nil); a.Status != 200 || !strings.Contains(string(a.Body), "healthy") {
				t.Fatalf("public route: %s", a)
			}
			if a := call(t, "POST", base+"/shorten", "", map[string]string{"url": "https://example.com/x"}); a.Status != 401 {
				t.Fatalf("protected route without a token: %s, want 401", a)
			}
			if a := call(t, "POST", base+"/shorten", bob, map[string]string{"url": "https://example.com/x"}); a.Status != 403 {
				t.Fatalf("protected route without the role: %s, want 403", a)
			}
			// With the role, and a spoofed identity header: the shortener
			// records alice, from the verdict.
			req, _ := http.NewRequest("POST", base+"/shorten", strings.NewReader(`{"url":"https://example.com/`+name+`"}`))
			req.Header.Set("Authorization", "Bearer "+alice)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Auth-Request-User", "mallory")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var created struct {
				ShortCode string `json:"short_code"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&created)
			resp.Body.Close()
			if resp.StatusCode != 201 || created.ShortCode == "" {
				t.Fatalf("protected route with the role: %d", resp.StatusCode)
			}
			owner := call(t, "GET", base+"/links/"+created.ShortCode, alice, nil)
			if owner.Status != 200 {
				t.Fatalf("alice's own link through %s: %s (the spoofed header reached the shortener?)", name, owner)
			}
			// A public route (in this test's rules) where the shortener
			// reads the identity headers: alice's sub, spoofed by a client
			// without a token, must not reach it (the shortener's own 401).
			spoof := map[string]string{"X-Auth-Request-User": aliceSub, "x-auth-request-user": aliceSub}
			if st := rawGet(t, ports.front, "GET", "/links/"+created.ShortCode, spoof); st != 401 {
				t.Fatalf("spoofed identity on a public route reached the shortener: %d, want its 401", st)
			}
			// Path confusion is refused, never judged under another path.
			want := 400
			if name == "nginx" {
				want = 403 // auth_request passes on only 401 and 403
			}
			for _, target := range []string{"/health/../shorten", "/health/%2e%2e/shorten", "/links%2F" + created.ShortCode, "//shorten"} {
				st := rawGet(t, ports.front, "POST", target, map[string]string{"Authorization": "Bearer " + alice})
				if st != want && st != 400 {
					t.Errorf("%s %s: %d, want %d (refused)", name, target, st, want)
				}
			}
		})
	}

	// Browser sign-in through each ingress (session mode): the page needs
	// a token, so the browser goes to the provider's login page and comes
	// back to the shortener's page, served through the ingress.
	for name, ports := range map[string]ingressPorts{"nginx": nginxPorts, "caddy": caddyPorts} {
		base := "http://" + ports.front
		obs := runBrowser(t, []browserStep{
			{Do: "goto", URL: base + "/"},
			{Do: "login", Username: "alice", Password: alicePassword},
			{Do: "reload"},
		})
		if !strings.HasPrefix(obs[0].URL, p.Issuer) || !obs[0].LoginForm {
			t.Errorf("%s: the page without a session did not lead to the provider's login form: at %s%s", name, obs[0].URL, obs[0].docChain())
		}
		for i, o := range obs[1:] {
			if o.URL != base+"/" || o.Status != http.StatusOK || o.Title != "Short links" {
				t.Errorf("%s, step %d: at %s (%d, title %q), want the shortener's page at %s/%s", name, i+1, o.URL, o.Status, o.Title, base, o.docChain())
			}
		}
		if found, httpOnly := obs[2].cookie("idp_session"); !found || !httpOnly {
			t.Errorf("%s: session cookie present=%v HttpOnly=%v", name, found, httpOnly)
		}
	}
}
