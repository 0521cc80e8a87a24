package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/testsupport"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

var svc = idptest.Client{ID: "svc-reporter", Secret: "reporter-secret", RealmRoles: []string{"creator"}, ServiceAccount: true}

// run executes the command with args and returns stdout, stderr and the
// error.
func run(t *testing.T, d deps, args ...string) (string, string, error) {
	t.Helper()
	cmd := newRootCmd(d)
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(t.Context())
	return out.String(), errOut.String(), err
}

func writeConfig(t *testing.T, idpSrv *idptest.Server, upstream, extra string) string {
	t.Helper()
	y := fmt.Sprintf(`
listen: 127.0.0.1:0
metrics_listen: 127.0.0.1:0
upstream: {url: %q}
idp:
  server_url: %q
  realm: %s
  client_id: shortener
  optional_audiences: [svc-reporter]
routes:
  - {match: GET /health, public: true}
  - {match: POST /shorten, roles: [creator]}
log: {level: warn}
%s`, upstream, idpSrv.URL, idpSrv.Realm, extra)
	p := filepath.Join(t.TempDir(), "proxy.yaml")
	if err := os.WriteFile(p, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckConfig(t *testing.T) {
	out, _, err := run(t, deps{}, "check-config", "../../../../config.example.yaml")
	if err != nil {
		t.Fatalf("example config: %v", err)
	}
	for _, want := range []string{"configuration OK", "POST /shorten", "roles(all: creator)", "(unmatched)", "upstream: http://127.0.0.1:8000"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	idpSrv := idptest.NewServer(t)
	bad := writeConfig(t, idpSrv, "http://127.0.0.1:8000", `default_policy: maybe`)
	raw, _ := os.ReadFile(bad)
	conflict := strings.Replace(string(raw), "  - {match: POST /shorten, roles: [creator]}", "  - {match: \"GET /{code}\", public: true}\n  - {match: /health, public: true}", 1)
	_ = os.WriteFile(bad, []byte(conflict), 0o600)
	_, _, err = run(t, deps{}, "--config", bad, "check-config")
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{"default_policy", `routes[2] "/health" conflicts with routes[1] "GET /{code}"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}

	// The environment and flags apply; unknown variables are errors.
	good := writeConfig(t, idpSrv, "http://127.0.0.1:8000", "")
	out, _, err = run(t, deps{environ: []string{"IDP_PROXY_CONFIG=" + good, "IDP_PROXY_UPSTREAM_URL=http://10.0.0.1:9000"}}, "check-config")
	if err != nil || !strings.Contains(out, "upstream: http://10.0.0.1:9000") {
		t.Errorf("env: %v\n%s", err, out)
	}
	out, _, err = run(t, deps{environ: []string{"IDP_PROXY_UPSTREAM_URL=http://10.0.0.1:9000"}}, "check-config", good, "--upstream", "http://10.0.0.2:9000")
	if err != nil || !strings.Contains(out, "upstream: http://10.0.0.2:9000") {
		t.Errorf("flag over env: %v\n%s", err, out)
	}
	if _, _, err := run(t, deps{environ: []string{"IDP_PROXY_UPSTREAM_ULR=x"}}, "check-config", good); err == nil || !strings.Contains(err.Error(), "IDP_PROXY_UPSTREAM_ULR") {
		t.Errorf("unknown env variable: %v", err)
	}
}

func TestVerify(t *testing.T) {
	idpSrv := idptest.NewServer(t)
	cfg := writeConfig(t, idpSrv, "http://127.0.0.1:8000", "")
	good := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))

	out, _, err := run(t, deps{}, "-c", cfg, "verify", good)
	if err != nil {
		t.Fatalf("valid token: %v\n%s", err, out)
	}
	var v struct {
		Decision string
		User     struct {
			Sub        string   `json:"sub"`
			RealmRoles []string `json:"realm_roles"`
		}
		Claims map[string]any
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if v.Decision != "valid" || v.User.Sub != "user-alice" || v.Claims["azp"] != "shortener" || len(v.User.RealmRoles) != 3 {
		t.Errorf("verdict %+v", v)
	}
	if strings.Contains(out, good) {
		t.Error("verify printed the token")
	}

	// A token valid past the year 9999 (exp 1e30): valid, and printed.
	far := idpSrv.UserClaims("shortener", "alice")
	far["exp"] = json.Number("1e30")
	out, _, err = run(t, deps{}, "-c", cfg, "verify", idpSrv.Mint(far))
	if err != nil || !strings.Contains(out, `"decision": "valid"`) || !strings.Contains(out, `"exp": 1e30`) {
		t.Errorf("exp 1e30: %v %s", err, out)
	}

	// From stdin, with a Bearer prefix.
	out, _, err = run(t, deps{stdin: strings.NewReader("Bearer " + good + "\n")}, "-c", cfg, "verify", "-")
	if err != nil || !strings.Contains(out, `"decision": "valid"`) {
		t.Errorf("stdin: %v %s", err, out)
	}

	claims := idpSrv.UserClaims("other-client", "mallory")
	for name, tok := range map[string]string{
		"other audience": idpSrv.Mint(claims),
		"tampered":       good[:len(good)-4] + "AAAA",
		"garbage":        "not-a-token",
	} {
		out, _, err := run(t, deps{}, "-c", cfg, "verify", tok)
		if err == nil || !strings.Contains(out, `"decision": "invalid"`) {
			t.Errorf("%s: err %v, out %s", name, err, out)
		}
	}
	// --request judges a request with the rules too.
	out, _, err = run(t, deps{}, "-c", cfg, "verify", "--request", "POST /shorten", good)
	if err != nil || !strings.Contains(out, `"rule": "POST /shorten"`) || !strings.Contains(out, `"decision": "allowed"`) {
		t.Errorf("--request allowed: %v %s", err, out)
	}
	plain := idpSrv.Mint(idpSrv.UserClaims("shortener", "bob"))
	out, _, err = run(t, deps{}, "-c", cfg, "verify", "--request", "POST /shorten", plain)
	if err == nil || !strings.Contains(out, `"decision": "forbidden"`) || !strings.Contains(out, `"status": 403`) {
		t.Errorf("--request forbidden: %v %s", err, out)
	}
	if _, _, err := run(t, deps{stdin: strings.NewReader("")}, "-c", cfg, "verify"); err == nil || !strings.Contains(err.Error(), "empty token") {
		t.Errorf("empty stdin: %v", err)
	}
}

func TestToken(t *testing.T) {
	idpSrv := idptest.NewServer(t, idptest.Options{Clients: []idptest.Client{svc}})
	cfg := writeConfig(t, idpSrv, "http://127.0.0.1:8000", "")
	env := []string{"IDP_PROXY_IDP_CLIENT_ID=" + svc.ID, "IDP_PROXY_IDP_CLIENT_SECRET=" + svc.Secret}
	out, _, err := run(t, deps{environ: env}, "-c", cfg, "token")
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(out)
	if strings.Count(tok, ".") != 2 || strings.Contains(out[:len(out)-1], "\n") {
		t.Fatalf("token output %q", out)
	}
	// The token is accepted by verify through optional_audiences.
	if out, _, err := run(t, deps{}, "-c", cfg, "verify", tok); err != nil || !strings.Contains(out, `"azp": "svc-reporter"`) {
		t.Errorf("verify of the service token: %v %s", err, out)
	}
	// A secret from a file.
	secretFile := filepath.Join(t.TempDir(), "secret")
	_ = os.WriteFile(secretFile, []byte(svc.Secret+"\n"), 0o600)
	env = []string{"IDP_PROXY_IDP_CLIENT_ID=" + svc.ID, "IDP_PROXY_IDP_CLIENT_SECRET_FILE=" + secretFile}
	if _, _, err := run(t, deps{environ: env}, "-c", cfg, "token"); err != nil {
		t.Errorf("secret from file: %v", err)
	}

	if _, _, err := run(t, deps{environ: []string{"IDP_PROXY_IDP_CLIENT_ID=" + svc.ID}}, "-c", cfg, "token"); err == nil || !strings.Contains(err.Error(), "client_secret") {
		t.Errorf("no secret: %v", err)
	}
	env = []string{"IDP_PROXY_IDP_CLIENT_ID=" + svc.ID, "IDP_PROXY_IDP_CLIENT_SECRET=wrong"}
	if _, _, err := run(t, deps{environ: env}, "-c", cfg, "token"); err == nil || !strings.Contains(err.Error(), "invalid_client") {
		t.Errorf("wrong secret: %v", err)
	}
}

func TestVersion(t *testing.T) {
	out, _, err := run(t, deps{}, "version")
	if err != nil || !strings.HasPrefix(out, "idp-proxy ") {
		t.Fatalf("%q %v", out, err)
	}
	flag, _, err := run(t, deps{}, "--version")
	if err != nil || flag != out {
		t.Fatalf("--version printed %q (%v), version printed %q", flag, err, out)
	}
}

// startServe runs `serve` with args and env until the test ends, and
// returns the proxy and operations addresses and the log buffer.
func startServe(t *testing.T, env []string, args ...string) (proxyAddr, opsAddr string, logs *syncBuffer, stop func() error) {
	t.Helper()
	addrs := make(chan [2]string, 1)
	d := deps{environ: env, ready: func(p, o string) { addrs <- [2]string{p, o} }}
	ctx, cancel := context.WithCancel(t.Context())
	cmd := newRootCmd(d)
	logs = &syncBuffer{}
	cmd.SetErr(logs)
	cmd.SetOut(io.Discard)
	cmd.SetArgs(append([]string{"serve"}, args...))
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			return fmt.Errorf("no shutdown")
		}
	}
	t.Cleanup(func() { _ = stop() })
	select {
	case a := <-addrs:
		return a[0], a[1], logs, stop
	case err := <-done:
		t.Fatalf("serve ended: %v\n%s", err, logs.String())
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not start")
	}
	return "", "", nil, nil
}

// waitReady polls /readyz until it answers 200.
func waitReady(t *testing.T, client *http.Client, url string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never ready", url)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestServe(t *testing.T) {
	idpSrv := idptest.NewServer(t)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "user="+r.Header.Get("X-Auth-Request-User")+" proto="+r.Header.Get("X-Forwarded-Proto"))
	}))
	t.Cleanup(upstream.Close)
	cfg := writeConfig(t, idpSrv, upstream.URL, "")
	proxyAddr, opsAddr, logs, stop := startServe(t, []string{"IDP_PROXY_LOG_LEVEL=info"}, "-c", cfg, "--listen", "127.0.0.1:0")
	waitReady(t, http.DefaultClient, "http://"+opsAddr+"/readyz")
	post := func(url, token string) (int, string) {
		req, _ := http.NewRequest("POST", url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	tok := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	if code, body := post("http://"+proxyAddr+"/shorten", tok); code != 200 || body != "user=user-alice proto=http" {
		t.Errorf("proxied request: %d %q", code, body)
	}
	if code, _ := post("http://"+proxyAddr+"/shorten", ""); code != 401 {
		t.Errorf("no token: %d", code)
	}
	if err := stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	if !strings.Contains(logs.String(), `"decision":"allowed"`) || strings.Contains(logs.String(), tok) {
		t.Errorf("logs: %s", logs.String())
	}
}

func TestServeTLS(t *testing.T) {
	idpSrv := idptest.NewServer(t)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "proto="+r.Header.Get("X-Forwarded-Proto"))
	}))
	t.Cleanup(upstream.Close)
	certFile, keyFile, pool := selfSigned(t)
	cfg := writeConfig(t, idpSrv, upstream.URL, fmt.Sprintf("tls: {cert_file: %q, key_file: %q}\n", certFile, keyFile))
	proxyAddr, _, _, _ := startServe(t, nil, "-c", cfg, "--metrics-listen", "off")
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get("https://" + proxyAddr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "proto=https" {
		t.Fatalf("over TLS: %d %q", resp.StatusCode, b)
	}

	// tls.min_version 1.3 refuses a TLS 1.2 client and serves a 1.3 one.
	cfg13 := writeConfig(t, idpSrv, upstream.URL, fmt.Sprintf("tls: {cert_file: %q, key_file: %q, min_version: \"1.3\"}\n", certFile, keyFile))
	addr13, _, _, _ := startServe(t, nil, "-c", cfg13, "--metrics-listen", "off")
	for _, c := range []struct {
		max uint16
		ok  bool
	}{{tls.VersionTLS12, false}, {tls.VersionTLS13, true}} {
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MaxVersion: c.max}}}
		resp, err := client.Get("https://" + addr13 + "/health")
		if resp != nil {
			resp.Body.Close()
		}
		if (err == nil) != c.ok {
			t.Errorf("min_version 1.3, client up to %s: err = %v, want ok=%v", tls.VersionName(c.max), err, c.ok)
		}
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	c := testsupport.SelfSigned(t, "127.0.0.1", x509.ExtKeyUsageServerAuth)
	return c.CertFile, c.KeyFile, c.Pool
}

// syncBuffer is the shared log sink safe for concurrent writers.
type syncBuffer = testsupport.SyncBuffer
