package interop_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/testneed"
)

// The realm served by provider/server.mjs (see provider/README.md).
const (
	realm        = "demo"
	clientID     = "shortener"
	clientSecret = "shortener-secret"
	svcClientID  = "svc-reporter"
	svcSecret    = "svc-reporter-secret"
)

// Paths, set by TestMain.
var (
	repoRoot string // the module root
	binDir   string // where the real binaries are built, once per test run
)

func TestMain(m *testing.M) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err == nil {
		_, err = os.Stat(filepath.Join(root, "go.mod"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "interop: cannot find the module root:", err)
		os.Exit(2)
	}
	repoRoot = root
	dir, err := os.MkdirTemp("", "idp-proxy-interop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "interop:", err)
		os.Exit(2)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// needs says which external tools a test requires.
type needs int

const (
	needProvider needs = 1 << iota // node + the provider's npm packages
	needBrowser                    // /usr/bin/chromium + playwright-core
)

// chromiumPath is Debian's Chromium, or $INTEROP_CHROMIUM.
func chromiumPath() string {
	if p := os.Getenv("INTEROP_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// requireTools skips the test (fails it when $CI is set) unless what it
// needs is installed, and skips it under -short.
func requireTools(t *testing.T, what needs) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	var missing []string
	if _, err := exec.LookPath("node"); err != nil {
		missing = append(missing, "node (Node.js >= 20) on PATH")
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	if what&needProvider != 0 && !exists(filepath.Join(repoRoot, "test/interop/provider/node_modules/oidc-provider/package.json")) {
		missing = append(missing, "the provider's npm packages (test/interop/provider/install.sh)")
	}
	if what&needBrowser != 0 {
		if !exists(chromiumPath()) {
			missing = append(missing, chromiumPath()+" (apt-get install chromium chromium-driver)")
		}
		if !exists(filepath.Join(repoRoot, "test/interop/browser/node_modules/playwright-core/package.json")) {
			missing = append(missing, "playwright-core (test/interop/browser/install.sh)")
		}
	}
	if len(missing) == 0 {
		return
	}
	testneed.Skip(t, testneed.EndToEnd, "end-to-end test needs %s; `.ci/setup` (as root) installs all of it", strings.Join(missing, ", "))
}

// ---------------------------------------------------------------------------
// the provider

type provider struct {
	*proc
	Issuer   string
	Port     int
	KeysFile string
	KIDs     []string
	// endpoints is the base URL of the endpoints: Keycloak's
	// {issuer}/protocol/openid-connect, or {issuer}/oauth2 with Plain.
	endpoints string
}

type providerOptions struct {
	Port         int      // 0: one from freePort
	KeysFile     string   // "": keys in memory
	RedirectURIs []string // redirect URIs of client shortener
	// PostLogoutRedirectURIs of client shortener ("<origin>/" of each
	// redirect URI when empty).
	PostLogoutRedirectURIs []string
	AccessTokenTTL         int    // seconds; 0: the provider's default (300)
	BackchannelLogoutURI   string // client shortener's back-channel logout URI
	// Plain runs it as an issuer that is not a Keycloak realm: the issuer
	// is http://127.0.0.1:PORT, the endpoints under /oauth2.
	Plain bool
	// Shape is the access tokens' claims: "" (Keycloak's), "entra" or
	// "auth0" (with Plain, the issuer then ends in "/").
	Shape string
}

// startProvider runs provider/server.mjs and waits for its readiness line.
func startProvider(t *testing.T, o providerOptions) *provider {
	t.Helper()
	if o.Port == 0 {
		// From freePort, not the kernel's choice: a port freePort handed
		// out for a process that has not bound it yet could be given to
		// the provider too.
		o.Port = freePort(t)
	}
	args := []string{"server.mjs", "--port", strconv.Itoa(o.Port), "--realm", realm}
	if o.KeysFile != "" {
		args = append(args, "--keys", o.KeysFile)
	}
	for _, u := range o.RedirectURIs {
		args = append(args, "--redirect-uri", u)
	}
	for _, u := range o.PostLogoutRedirectURIs {
		args = append(args, "--post-logout-redirect-uri", u)
	}
	if o.AccessTokenTTL > 0 {
		args = append(args, "--access-token-ttl", strconv.Itoa(o.AccessTokenTTL))
	}
	if o.BackchannelLogoutURI != "" {
		args = append(args, "--backchannel-logout-uri", o.BackchannelLogoutURI)
	}
	if o.Plain {
		args = append(args, "--plain")
	}
	if o.Shape != "" {
		args = append(args, "--shape", o.Shape)
	}
	cmd := exec.Command("node", args...)
	cmd.Dir = filepath.Join(repoRoot, "test", "interop", "provider")
	p := startProc(t, "provider", cmd)
	var line string
	select {
	case line = <-p.stdout.firstLine:
	case <-p.done:
		t.Fatalf("provider exited (%v):\n%s", p.waitErr, tail(p.stderr.String(), 4000))
	case <-time.After(30 * time.Second):
		t.Fatalf("provider not ready within 30 s:\n%s", tail(p.stderr.String(), 4000))
	}
	var ready struct {
		Ready       bool     `json:"ready"`
		Issuer      string   `json:"issuer"`
		Port        int      `json:"port"`
		SigningKIDs []string `json:"signing_kids"`
	}
	if err := json.Unmarshal([]byte(line), &ready); err != nil || !ready.Ready || ready.Issuer == "" {
		t.Fatalf("provider readiness line %q: %v", line, err)
	}
	endpoints := ready.Issuer + "/protocol/openid-connect"
	if o.Plain {
		endpoints = strings.TrimSuffix(ready.Issuer, "/") + "/oauth2"
	}
	return &provider{proc: p, Issuer: ready.Issuer, Port: ready.Port, KeysFile: o.KeysFile, KIDs: ready.SigningKIDs, endpoints: endpoints}
}

// ServerURL is the idp server_url (the issuer without /realms/<realm>).
func (p *provider) ServerURL() string { return "http://127.0.0.1:" + strconv.Itoa(p.Port) }

// TokenURL is the token endpoint (Keycloak's path of the realm unless
// Plain).
func (p *provider) TokenURL() string { return p.endpoints + "/token" }

// AuthURL is the authorization endpoint (Keycloak's path of the realm
// unless Plain).
func (p *provider) AuthURL() string { return p.endpoints + "/auth" }

// ---------------------------------------------------------------------------
// the real binaries

var build struct {
	once      sync.Once
	shortener string
	proxy     string
	err       error
}

// binaries builds cmd/shortener and cmd/idp-proxy once per test run, with
// the race detector when the tests run with it.
func binaries(t *testing.T) (shortener, idpProxy string) {
	t.Helper()
	build.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			build.err = fmt.Errorf("go tool not on PATH: %w", err)
			return
		}
		args := []string{"build", "-o", binDir + string(os.PathSeparator)}
		if raceEnabled {
			args = append(args, "-race")
		}
		args = append(args, "./cmd/shortener", "./cmd/idp-proxy")
		cmd := exec.Command(goTool, args...)
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
			return
		}
		build.shortener = filepath.Join(binDir, "shortener")
		build.proxy = filepath.Join(binDir, "idp-proxy")
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.shortener, build.proxy
}

// startShortener runs cmd/shortener on a bbolt file in t.TempDir() and
// returns its base URL. extra flags are appended.
func startShortener(t *testing.T, extra ...string) (string, *proc) {
	t.Helper()
	bin, _ := binaries(t)
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	args := append([]string{
		"--listen", addr,
		"--store", "bolt:" + filepath.Join(t.TempDir(), "shortener.db"),
		"--metrics-listen", "off",
		"--log-format", "json",
	}, extra...)
	p := startProc(t, "shortener", exec.Command(bin, args...))
	base := "http://" + addr
	waitHTTP(t, p, base+"/health", http.StatusOK)
	return base, p
}

// stack is idp-proxy in front of the shortener, both real binaries.
type stack struct {
	Proxy     string // http://127.0.0.1:PORT
	Ops       string // the operations listener
	Shortener string // the upstream, direct
	proxyProc *proc
	shortProc *proc
}

// checkNoTokensLogged fails the test when the proxy's or the shortener's
// output holds a JWT (logs must never carry tokens) or one of tokens.
func (s *stack) checkNoTokensLogged(t *testing.T, tokens ...string) {
	t.Helper()
	for _, p := range []*proc{s.proxyProc, s.shortProc} {
		out := p.stdout.String() + p.stderr.String()
		if out == "" {
			t.Errorf("%s logged nothing: the check below would prove nothing", p.name)
		}
		if strings.Contains(out, "eyJ") {
			t.Errorf("%s logged something that looks like a JWT", p.name)
		}
		for _, tok := range tokens {
			if tok != "" && strings.Contains(out, tok) {
				t.Errorf("%s logged a token", p.name)
			}
		}
	}
}

// realmYAML names the provider's Keycloak realm at serverURL in the idp
// section (the shorthand server_url + realm).
func realmYAML(serverURL string) string {
	return fmt.Sprintf("  server_url: %s\n  realm: %s\n", serverURL, realm)
}

// issuerYAML names the provider by its issuer in the idp section.
func issuerYAML(issuer string) string { return fmt.Sprintf("  issuer_url: %s\n", issuer) }

// proxyYAMLHead is the beginning of idp-proxy's YAML that every interop
// test shares, in the documented shape of config.example.yaml: the
// listeners, the upstream, and the provider (idp lines of realmYAML or
// issuerYAML) with the login routes (callback under publicURL). extraIDP
// (whole lines) is added to the idp section.
func proxyYAMLHead(listen, opsAddr, upstream, provider, publicURL, extraIDP string) string {
	return fmt.Sprintf(`listen: %s
metrics_listen: %s
upstream:
  url: %s
idp:
%s  client_id: %s
  client_secret: %s
  include_routes: true
  redirect_uri: %s/auth/callback
  session_secret: interop-session-secret-0123456789abcdef
%s  http_timeout: 5s
`, listen, opsAddr, upstream, provider, clientID, clientSecret, publicURL, extraIDP)
}

// proxyConfig is the YAML given to idp-proxy for the provider (idp lines
// of realmYAML or issuerYAML): the shortener's rules, service tokens
// through optional audiences.
func proxyConfig(provider, proxyAddr, opsAddr, upstream string) string {
	return proxyYAMLHead(proxyAddr, opsAddr, upstream, provider, "http://"+proxyAddr,
		"  optional_audiences: ["+svcClientID+"]\n") + `routes:
  - match: GET /health
    public: true
  - match: GET /{code}
    public: true
  - match: POST /shorten
    roles: [creator]
default_policy: deny
log:
  format: json
  level: debug
`
}

// startStack runs the shortener and idp-proxy in front of it against the
// provider (idp lines of realmYAML or issuerYAML). The proxy's port is chosen by the caller because
// its callback URL must be registered at the provider. With waitReady, it
// waits until the proxy's /readyz says the keys are loaded; otherwise only
// until /healthz answers.
func startStack(t *testing.T, provider string, proxyPort int, waitReady bool) *stack {
	t.Helper()
	_, proxyBin := binaries(t)
	proxyAddr := "127.0.0.1:" + strconv.Itoa(proxyPort)
	opsAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	upstream, sp := startShortener(t, "--trust-identity-headers", "--base-url", "http://"+proxyAddr)
	cfg := filepath.Join(t.TempDir(), "idp-proxy.yaml")
	if err := os.WriteFile(cfg, []byte(proxyConfig(provider, proxyAddr, opsAddr, upstream)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(proxyBin, "serve", "--config", cfg)
	cmd.Env = cleanEnv()
	pp := startProc(t, "idp-proxy", cmd)
	s := &stack{Proxy: "http://" + proxyAddr, Ops: "http://" + opsAddr, Shortener: upstream, proxyProc: pp, shortProc: sp}
	if waitReady {
		waitHTTP(t, pp, s.Ops+"/readyz", http.StatusOK)
	} else {
		waitHTTP(t, pp, s.Ops+"/healthz", http.StatusOK)
	}
	return s
}

// cleanEnv is the environment without IDP_PROXY_* variables (which would
// override the test's config file).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "IDP_PROXY_") {
			env = append(env, kv)
		}
	}
	return env
}

// ---------------------------------------------------------------------------
// HTTP

type answer struct {
	Status int
	Header http.Header
	Body   []byte
}

func (a answer) String() string { return fmt.Sprintf("%d %s", a.Status, a.Body) }

// call sends one request with an optional bearer token and JSON body,
// without following redirects.
func call(t *testing.T, method, url, token string, body any) answer {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return answer{Status: resp.StatusCode, Header: resp.Header, Body: b}
}
