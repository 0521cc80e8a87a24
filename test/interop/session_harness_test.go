package interop_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/testneed"
	"github.com/redis/go-redis/v9"
)

// The harness of the browser-session tests (session_test.go): a test
// upstream that echoes what idp-proxy forwards, idp-proxy in session mode,
// a load balancer in front of two replicas, Redis, and the browser run.

// echo is what the test upstream saw of one request; it embeds it in its
// page as <script id="echo" type="application/json">.
type echo struct {
	Replica       string `json:"replica"`
	Path          string `json:"path"`
	User          string `json:"user"`
	Username      string `json:"username"`
	Roles         string `json:"roles"`
	TokenFP       string `json:"token_fp"`  // SHA-256 prefix of the forwarded access token: never the token
	TokenExp      int64  `json:"token_exp"` // its exp claim
	SessionCookie bool   `json:"session_cookie"`
	// The claim headers of TestProxyClaimRules: every copy received,
	// so that a client-sent one that got through shows.
	Tenant []string `json:"tenant,omitempty"`
	Groups []string `json:"groups,omitempty"`
}

// echoUpstream is the web app behind idp-proxy: every GET answers an HTML
// page (JSON under .../data) describing the request it received.
type echoUpstream struct {
	URL  string
	name string

	mu   sync.Mutex
	seen []echo
}

var echoPage = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>interop app {{.Replica}}</title></head>
<body><h1 id="app">interop app</h1><p id="who">{{if .Username}}signed in as {{.Username}}{{else}}anonymous{{end}}</p>
<script id="echo" type="application/json">{{.JSON}}</script></body></html>
`))

func startEchoUpstream(t *testing.T, name string) *echoUpstream {
	t.Helper()
	u := &echoUpstream{name: name}
	srv := httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(srv.Close)
	u.URL = srv.URL
	return u
}

func (u *echoUpstream) serve(w http.ResponseWriter, r *http.Request) {
	e := echo{
		Replica:  u.name,
		Path:     r.URL.RequestURI(),
		User:     r.Header.Get("X-Auth-Request-User"),
		Username: r.Header.Get("X-Auth-Request-Preferred-Username"),
		Roles:    r.Header.Get("X-Auth-Request-Roles"),
		Tenant:   r.Header.Values("X-Auth-Request-Tenant"),
		Groups:   r.Header.Values("X-Auth-Request-Groups"),
	}
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && tok != "" {
		sum := sha256.Sum256([]byte(tok))
		e.TokenFP = hex.EncodeToString(sum[:8])
		e.TokenExp = jwtExp(tok)
	}
	for _, c := range r.Cookies() {
		if strings.Contains(c.Name, "idp_session") {
			e.SessionCookie = true
		}
	}
	u.mu.Lock()
	u.seen = append(u.seen, e)
	u.mu.Unlock()
	w.Header().Set("Cache-Control", "no-store")
	if strings.HasSuffix(r.URL.Path, "/data") {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(e)
		return
	}
	b, _ := json.Marshal(e) // escapes <, > and &: safe inside <script>
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = echoPage.Execute(w, struct {
		echo
		JSON template.JS
	}{e, template.JS(b)})
}

// requests returns what the upstream has seen so far.
func (u *echoUpstream) requests() []echo {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]echo(nil), u.seen...)
}

// jwtExp reads the exp claim of a JWT without verifying it (idp-proxy
// verified it; the upstream only reports it).
func jwtExp(tok string) int64 {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return 0
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return 0
	}
	var c struct {
		Exp int64 `json:"exp"`
	}
	_ = json.Unmarshal(b, &c)
	return c.Exp
}

// sessionProxyOptions configure one idp-proxy in session mode.
type sessionProxyOptions struct {
	name      string // for logs: "idp-proxy", "idp-proxy-a", ...
	port      int    // its listener
	serverURL string // the provider, a Keycloak realm's server_url
	// idp, when set, names the provider instead of serverURL: whole lines
	// of the idp section (issuerYAML, a claim mapping).
	idp           string
	publicURL     string // where browsers reach it (a load balancer's URL for replicas)
	upstream      string
	store         string // cookie or redis
	redisURL      string
	redisPrefix   string
	refreshMargin time.Duration
}

// sessionProxyConfig is idp-proxy's YAML for the session tests: the
// documented keys of config.example.yaml. /app/ needs the realm role
// creator (alice has it), /public/ is public, everything else is denied.
func sessionProxyConfig(o sessionProxyOptions, opsAddr string) string {
	provider := o.idp
	if provider == "" {
		provider = realmYAML(o.serverURL)
	}
	return proxyYAMLHead("127.0.0.1:"+strconv.Itoa(o.port), opsAddr, o.upstream, provider, o.publicURL, "") + fmt.Sprintf(`routes:
  - match: GET /public/
    public: true
  - match: GET /app/
    roles: [creator]
default_policy: deny
session:
  enabled: true
  store: %[1]s
  redis_url: "%[2]s"
  redis_prefix: "%[3]s"
  max_age: 1h
  refresh_margin: %[4]s
  post_logout_redirect_uri: %[5]s/public/bye
server:
  drain_delay: 0s # stopped by SIGTERM at the end of the test: no load balancer to drain
log:
  format: json
  level: debug
`, o.store, o.redisURL, o.redisPrefix, o.refreshMargin, o.publicURL)
}

// startSessionProxy runs the idp-proxy binary with sessionProxyConfig and
// waits until its keys are loaded.
func startSessionProxy(t *testing.T, o sessionProxyOptions) *proc {
	t.Helper()
	opsAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	return startProxyYAML(t, o.name, sessionProxyConfig(o, opsAddr), opsAddr)
}

// startProxyYAML runs the idp-proxy binary with the configuration yaml,
// whose metrics_listen is opsAddr, and waits until its keys are loaded.
func startProxyYAML(t *testing.T, name, yaml, opsAddr string) *proc {
	t.Helper()
	_, bin := binaries(t)
	cfg := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--config", cfg)
	cmd.Env = cleanEnv()
	p := startProc(t, name, cmd)
	waitHTTP(t, p, "http://"+opsAddr+"/readyz", http.StatusOK)
	return p
}

// checkNoTokens fails the test when a process's output holds something
// that looks like a JWT: logs must never carry tokens.
func checkNoTokens(t *testing.T, procs ...*proc) {
	t.Helper()
	for _, p := range procs {
		out := p.stdout.String() + p.stderr.String()
		if out == "" {
			t.Errorf("%s logged nothing: the check below would prove nothing", p.name)
		}
		if strings.Contains(out, "eyJ") {
			t.Errorf("%s logged something that looks like a JWT", p.name)
		}
	}
}

// logLines returns the JSON log records of p whose msg is msg.
func logLines(p *proc, msg string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(p.stdout.String()+p.stderr.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// the browser

type browserStep struct {
	Do       string `json:"do"`
	URL      string `json:"url,omitempty"`
	Until    string `json:"until,omitempty"`
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Selector string `json:"selector,omitempty"`
	Path     string `json:"path,omitempty"`
	SlackMs  int    `json:"slackMs,omitempty"`
}

type observation struct {
	Do        string     `json:"do"`
	URL       string     `json:"url"`
	Status    int        `json:"status"`
	Title     string     `json:"title"`
	Docs      loadedDocs `json:"docs"`
	Echo      *echo      `json:"echo"`
	LoginForm bool       `json:"loginForm"`
	LoggedOut bool       `json:"loggedOut"`
	Cookies   []struct {
		Name     string `json:"name"`
		Domain   string `json:"domain"`
		Secure   bool   `json:"secure"`
		Path     string `json:"path"`
		HTTPOnly bool   `json:"httpOnly"`
		SameSite string `json:"sameSite"`
	} `json:"cookies"`
	WaitedMs int `json:"waitedMs"`
	Fetch    *struct {
		Status      int    `json:"status"`
		ContentType string `json:"contentType"`
		Body        string `json:"body"`
	} `json:"fetch"`
}

// cookie reports whether the browser holds a cookie named name, and
// whether it is HttpOnly.
func (o observation) cookie(name string) (found, httpOnly bool) {
	for _, c := range o.Cookies {
		if c.Name == name {
			return true, c.HTTPOnly
		}
	}
	return false, false
}

// loadedDocs are the documents the main frame loaded during a step.
type loadedDocs []struct {
	Method string `json:"method"`
	URL    string `json:"url"`
	Status int    `json:"status"`
}

// chain is the documents, one per line.
func (d loadedDocs) chain() string {
	var b strings.Builder
	for _, doc := range d {
		fmt.Fprintf(&b, "\n    %s %s -> %d", doc.Method, doc.URL, doc.Status)
	}
	return b.String()
}

// docChain is the main frame's documents of the step, one per line.
func (o observation) docChain() string { return o.Docs.chain() }

// runBrowser runs browser/session.mjs with steps in one headless Chromium,
// as TestBrowserLoginFlow runs login.mjs, and returns one observation per
// step.
func runBrowser(t *testing.T, steps []browserStep) []observation {
	t.Helper()
	return runBrowserWith(t, nil, steps)
}

// runBrowserWith is runBrowser with extra Chromium flags.
func runBrowserWith(t *testing.T, args []string, steps []browserStep) []observation {
	t.Helper()
	var res struct {
		Observations []observation `json:"observations"`
	}
	runScript(t, "session.mjs", map[string]any{"chromium": chromiumPath(), "timeoutMs": 30000, "steps": steps, "args": args}, 120*time.Second, &res)
	if len(res.Observations) != len(steps) {
		t.Fatalf("browser: %d observations for %d steps", len(res.Observations), len(steps))
	}
	var b strings.Builder
	for i, o := range res.Observations {
		fmt.Fprintf(&b, "\n  %d %s:%s", i, o.Do, o.docChain())
	}
	t.Logf("documents loaded by each step (query values redacted):%s", b.String())
	return res.Observations
}

// runScript runs node browser/SCRIPT with arg as its one JSON argument,
// within timeout, logs what it printed on stderr, and decodes its stdout
// (one JSON document) into out.
func runScript(t *testing.T, script string, arg map[string]any, timeout time.Duration, out any) {
	t.Helper()
	a, err := json.Marshal(arg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("browser", script), string(a))
	cmd.Dir = filepath.Join(repoRoot, "test", "interop")
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("browser run (%s) failed: %v\n%s", script, err, tail(stderr.String(), 6000))
	}
	t.Logf("browser %s (%s):\n%s", script, time.Since(start).Round(100*time.Millisecond), strings.TrimSpace(stderr.String()))
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("browser output %q: %v", stdout, err)
	}
}

// ---------------------------------------------------------------------------
// Redis and the load balancer

// testRedis returns the Redis of TEST_REDIS_URL and a fresh key prefix
// (removed at the end of the test). Without TEST_REDIS_URL the test
// skips, unless IDP_REQUIRE_REDIS is set (CI): then it fails.
func testRedis(t *testing.T) (*redis.Client, string, string) {
	t.Helper()
	u := testneed.RedisURL(t, "the Redis replica test")
	opts, err := redis.ParseURL(u)
	if err != nil {
		t.Fatalf("TEST_REDIS_URL: %v", err)
	}
	rdb := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		t.Fatalf("Redis at %s: %v", opts.Addr, err)
	}
	prefix := fmt.Sprintf("interop-%d-%d:", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if keys, err := rdb.Keys(ctx, prefix+"*").Result(); err == nil && len(keys) > 0 {
			_ = rdb.Del(ctx, keys...).Err()
		}
		_ = rdb.Close()
	})
	return rdb, u, prefix
}

// frontHop is one request the load balancer forwarded.
type frontHop struct {
	Method, Path, Replica string
}

// front is a load balancer for the replica test: it forwards by a rule
// the test controls (replicaFor) instead of round robin, so that which
// replica serves which step is certain.
type front struct {
	URL string
	mu  sync.Mutex
	log []frontHop
}

// startFront serves on ln and forwards each request to the replica
// replicaFor names; it keeps the Host header, like a load balancer.
func startFront(t *testing.T, ln net.Listener, replicas map[string]string, replicaFor func(*http.Request) string) *front {
	t.Helper()
	f := &front{URL: "http://" + ln.Addr().String()}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := replicaFor(r)
		f.mu.Lock()
		f.log = append(f.log, frontHop{r.Method, r.URL.Path, name})
		f.mu.Unlock()
		out := r.Clone(r.Context())
		out.RequestURI = ""
		out.URL.Scheme, out.URL.Host = "http", strings.TrimPrefix(replicas[name], "http://")
		resp, err := tr.RoundTrip(out)
		if err != nil {
			http.Error(w, "front: "+err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	return f
}

// hops returns the requests forwarded so far.
func (f *front) hops() []frontHop {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]frontHop(nil), f.log...)
}
