package interop_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/publicsuffix"
)

// Forward-auth for many hosts: real nginx and Caddy, each with the
// configuration shipped in deploy/ingress/many-hosts (addresses and
// certificate rewritten), in front of two apps on two hosts (a.example.com,
// b.example.com), with ONE idp-proxy answering the verdicts of both, the
// central login host login.example.com, the redirect allowlist and the
// shared session cookie. Host names reach the ingress through a dialer
// (Go) or --host-resolver-rules (Chromium): everything stays on loopback.

// manyHostsPorts are one ingress setup's loopback addresses; the shipped
// files use 127.0.0.1:443, :4180, :4181, :8001 and :8002.
type manyHostsPorts struct {
	front, login, verify, appA, appB string
	cert, key                        string
}

func (p manyHostsPorts) port() string { _, port, _ := net.SplitHostPort(p.front); return port }

func (p manyHostsPorts) rewrite(s string) string {
	return strings.NewReplacer(
		"127.0.0.1:443", p.front, ".example.com:443", ".example.com:"+p.port(),
		"127.0.0.1:4180", p.login, "127.0.0.1:4181", p.verify,
		"127.0.0.1:8001", p.appA, "127.0.0.1:8002", p.appB,
		"/etc/ssl/idp-proxy/example.com.pem", p.cert, "/etc/ssl/idp-proxy/example.com.key", p.key,
	).Replace(s)
}

func shippedManyHosts(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "ingress", "many-hosts", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// startManyHostsAuth runs idp-proxy from many-hosts/idp-proxy.yaml for one
// ingress, pointed at the provider, with the ingress's port in its URLs.
func startManyHostsAuth(t *testing.T, name string, p *provider, ports manyHostsPorts) *proc {
	t.Helper()
	_, bin := binaries(t)
	cfg := strings.NewReplacer(
		"server_url: https://sso.example.com", "server_url: "+p.ServerURL(),
		"client_id: apps", "client_id: "+clientID,
		"https://login.example.com/", "https://login.example.com:"+ports.port()+"/",
		`"*.example.com"`, `"*.example.com:`+ports.port()+`"`,
		"metrics_listen: 127.0.0.1:9180", "metrics_listen: 127.0.0.1:"+strconv.Itoa(freePort(t)),
		"routes:\n", "routes:\n  - match: GET /app/\n    roles: [creator]\n",
	).Replace(ports.rewrite(shippedManyHosts(t, "idp-proxy.yaml"))) + "server:\n  drain_delay: 0s\n"
	path := filepath.Join(t.TempDir(), "idp-proxy.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--config", path)
	cmd.Env = append(cleanEnv(),
		"IDP_PROXY_IDP_CLIENT_SECRET="+clientSecret,
		"IDP_PROXY_IDP_SESSION_SECRET=interop-session-secret-0123456789abcdef",
		"IDP_PROXY_LOG_FORMAT=json")
	px := startProc(t, "idp-proxy ("+name+")", cmd)
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, "http://"+ports.verify+"/auth/verify", nil)
		req.Header.Set("X-Original-URI", "/public/ready")
		req.Header.Set("X-Forwarded-Host", "a.example.com")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return px
			}
		}
		if px.exited() || time.Now().After(deadline) {
			t.Fatalf("%s: no verdict", px.name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hostClient reaches every *.example.com host at the ingress's address,
// trusts its test certificate, keeps cookies and does not follow redirects.
func hostClient(front string) *http.Client {
	jar, _ := cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List})
	d := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Client{
		Jar:     jar,
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				if strings.Contains(addr, ".example.com:") {
					addr = front
				}
				return d.DialContext(ctx, network, addr)
			},
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the test's own certificate
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func TestIngressManyHosts(t *testing.T) {
	requireTools(t, needProvider|needBrowser)
	nginxBin := ingressBin(t, "nginx")
	caddyBin := ingressBin(t, "caddy")
	cert, key := selfSignedCert(t, "*.example.com")
	appA, appB := startEchoUpstream(t, "a"), startEchoUpstream(t, "b")
	addr := func() string { return "127.0.0.1:" + strconv.Itoa(freePort(t)) }
	setups := map[string]manyHostsPorts{}
	var redirects []string
	for _, name := range []string{"nginx", "caddy"} {
		ports := manyHostsPorts{front: addr(), login: addr(), verify: addr(),
			appA: strings.TrimPrefix(appA.URL, "http://"), appB: strings.TrimPrefix(appB.URL, "http://"), cert: cert, key: key}
		setups[name] = ports
		redirects = append(redirects, "https://login.example.com:"+ports.port()+"/auth/callback")
	}
	p := startProvider(t, providerOptions{RedirectURIs: append(redirects, unusedRedirect)})
	for name, ports := range setups {
		startManyHostsAuth(t, name, p, ports)
	}

	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(setups["nginx"].rewrite(shippedManyHosts(t, "nginx.conf"))), 0o644); err != nil {
		t.Fatal(err)
	}
	global := "daemon off;"
	if os.Geteuid() == 0 {
		global += " user root;"
	}
	ng := startProc(t, "nginx", exec.Command(nginxBin, "-p", dir, "-c", conf, "-g", global))
	caddyfile := filepath.Join(t.TempDir(), "Caddyfile")
	if err := os.WriteFile(caddyfile, []byte(setups["caddy"].rewrite(shippedManyHosts(t, "Caddyfile"))), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(caddyBin, "run", "--config", caddyfile, "--adapter", "caddyfile")
	home := t.TempDir()
	cmd.Env = append(cleanEnv(), "HOME="+home, "XDG_DATA_HOME="+home, "XDG_CONFIG_HOME="+home)
	cd := startProc(t, "caddy", cmd)
	for name, pr := range map[string]*proc{"nginx": ng, "caddy": cd} {
		c := hostClient(setups[name].front)
		deadline := time.Now().Add(30 * time.Second)
		for {
			resp, err := c.Get("https://a.example.com:" + setups[name].port() + "/public/up")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if pr.exited() || time.Now().After(deadline) {
				t.Fatalf("%s did not serve a.example.com (%v)", name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	alice := userToken(t, p, unusedRedirect, "alice", "alice-password").AccessToken
	for name, ports := range setups {
		t.Run(name, func(t *testing.T) {
			c := hostClient(ports.front)
			a, b := "https://a.example.com:"+ports.port(), "https://b.example.com:"+ports.port()
			get := func(u, token string, hdr ...string) *http.Response {
				t.Helper()
				req, _ := http.NewRequest(http.MethodGet, u, nil)
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				for i := 0; i+1 < len(hdr); i += 2 {
					req.Header.Set(hdr[i], hdr[i+1])
				}
				resp, err := c.Do(req)
				if err != nil {
					t.Fatalf("GET %s: %v", u, err)
				}
				resp.Body.Close()
				return resp
			}
			// Each host's app, judged by one idp-proxy: the identity
			// reaches the right app, the host's own rules apply.
			nA, nB := len(appA.requests()), len(appB.requests())
			if r := get(a+"/app/x", alice); r.StatusCode != 200 || len(appA.requests()) != nA+1 || appA.requests()[nA].Username != "alice" {
				t.Errorf("a.example.com with a token: %d", r.StatusCode)
			}
			if r := get(b+"/app/x", alice); r.StatusCode != 200 || len(appB.requests()) != nB+1 || appB.requests()[nB].Username != "alice" {
				t.Errorf("b.example.com with a token: %d", r.StatusCode)
			}
			if r := get(b+"/admin/x", alice); r.StatusCode != http.StatusForbidden {
				t.Errorf("b.example.com/admin/ without the role: %d, want 403 (the host's rule)", r.StatusCode)
			}
			if r := get(a+"/admin/x", alice); r.StatusCode != 200 {
				t.Errorf("a.example.com/admin/ (no rule of its own): %d, want 200", r.StatusCode)
			}
			if r := get(a+"/app/x", "", "Accept", "application/json"); r.StatusCode != http.StatusUnauthorized {
				t.Errorf("a.example.com without a token: %d, want 401", r.StatusCode)
			}
			nA = len(appA.requests())
			if r := get(a+"/public/x", "", "X-Auth-Request-User", "mallory"); r.StatusCode != 200 || appA.requests()[nA].User != "" {
				t.Errorf("a spoofed identity on a public route reached the app: %d %+v", r.StatusCode, appA.requests())
			}
			if name == "nginx" {
				if r := get("https://c.example.com:"+ports.port()+"/public/x", alice); r.StatusCode != http.StatusMisdirectedRequest {
					t.Errorf("a host no app serves: %d, want 421", r.StatusCode)
				}
			}
			// A browser navigation without a session goes to the central
			// login host, to come back to the app's own URL.
			r := get(a+"/app/page?x=1", "", "Accept", "text/html", "Sec-Fetch-Mode", "navigate")
			loc, _ := url.Parse(r.Header.Get("Location"))
			if r.StatusCode != http.StatusFound || loc == nil || loc.Host != "login.example.com:"+ports.port() || loc.Query().Get("return_to") != a+"/app/page?x=1" {
				t.Errorf("navigation without a session: %d to %q", r.StatusCode, r.Header.Get("Location"))
			}
			// A sign-in started at the login route of an app's host (an
			// app's own "Sign in" link): the login state is the domain's,
			// so that the central callback host reads it.
			r = get(a+"/auth/login?return_to="+url.QueryEscape("/app/x"), "", "Accept", "text/html")
			var state *http.Cookie
			for _, c := range r.Cookies() {
				if c.Name == "idp_login" {
					state = c
				}
			}
			if loc, _ := url.Parse(r.Header.Get("Location")); r.StatusCode != http.StatusFound || loc == nil || loc.Query().Get("redirect_uri") != "https://login.example.com:"+ports.port()+"/auth/callback" ||
				state == nil || state.Domain != "example.com" {
				t.Errorf("login on a.example.com: %d to %q, state cookie %+v: want the provider with the central callback, and a state cookie for example.com", r.StatusCode, r.Header.Get("Location"), state)
			}
			login := "https://login.example.com:" + ports.port() + "/auth/login?rd="
			for target, want := range map[string]int{
				b + "/app/": http.StatusFound, "https://evil.test/": http.StatusBadRequest, "https://a.example.com.evil.test:" + ports.port() + "/": http.StatusBadRequest,
				"//evil.test/": http.StatusBadRequest, "http://a.example.com:" + ports.port() + "/": http.StatusBadRequest,
			} {
				if r := get(login+url.QueryEscape(target), ""); r.StatusCode != want {
					t.Errorf("login with rd %s: %d, want %d", target, r.StatusCode, want)
				}
			}
		})
	}

	// One sign-in for both hosts, in Chromium, through each ingress.
	for name, ports := range setups {
		a, b := "https://a.example.com:"+ports.port(), "https://b.example.com:"+ports.port()
		obs := runBrowserWith(t, []string{"--host-resolver-rules=MAP *.example.com " + strings.Split(ports.front, ":")[0], "--ignore-certificate-errors"}, []browserStep{
			{Do: "goto", URL: a + "/app/page"},
			{Do: "login", Username: "alice", Password: alicePassword},
			{Do: "goto", URL: b + "/app/page"},
			{Do: "goto", URL: b + "/auth/logout"},
			{Do: "goto", URL: a + "/public/after"},
		})
		if o := obs[1]; o.URL != a+"/app/page" || o.Echo == nil || o.Echo.Replica != "a" || o.Echo.Username != "alice" {
			t.Errorf("%s: after the sign-in on a.example.com: at %s, echo %+v%s", name, o.URL, o.Echo, o.docChain())
		}
		if o := obs[2]; o.URL != b+"/app/page" || o.Echo == nil || o.Echo.Replica != "b" || o.Echo.Username != "alice" || o.LoginForm {
			t.Errorf("%s: b.example.com needed a second sign-in: at %s, echo %+v%s", name, o.URL, o.Echo, o.docChain())
		}
		if o := obs[4]; o.Echo == nil || o.Echo.Replica != "a" || o.Echo.Username != "" {
			t.Errorf("%s: a.example.com after the logout on b.example.com: echo %+v%s", name, o.Echo, o.docChain())
		}
	}
}
