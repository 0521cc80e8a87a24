package interop_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// recorder is an app that records the requests it gets.
type recorder struct {
	mu   sync.Mutex
	last *http.Request
	body string
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.last, rc.body = r.Clone(context.Background()), string(b)
	rc.mu.Unlock()
	_, _ = io.WriteString(w, "ok")
}

func (rc *recorder) get() (*http.Request, string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.last, rc.body
}

// TestIngressAssertion: nginx and Caddy, from the files shipped in
// deploy/ingress, with idp-proxy's forward-auth configuration shipped
// there (credential assertion): the app gets the verdict's assertion,
// which verifies against idp-proxy as an issuer, and the caller's token
// in no header and not in the body; a client's forged assertion never
// gets through. The provider is idptest (no Node.js needed).
func TestIngressAssertion(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	bins := map[string]string{"nginx": ingressBin(t, "nginx"), "caddy": ingressBin(t, "caddy")}
	_, bin := binaries(t)
	idpSrv := idptest.NewServer(t, idptest.Options{Clients: []idptest.Client{{ID: "shortener", Secret: clientSecret}}})
	alice := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	port := func() string { return "127.0.0.1:" + strconv.Itoa(freePort(t)) }
	for _, name := range []string{"nginx", "caddy"} {
		t.Run(name, func(t *testing.T) {
			ports := ingressPorts{front: port(), login: port(), verify: port(), app: port()}
			app := &recorder{}
			ln, err := net.Listen("tcp", ports.app)
			if err != nil {
				t.Fatal(err)
			}
			appSrv := &http.Server{Handler: app, ReadHeaderTimeout: 5 * time.Second}
			go func() { _ = appSrv.Serve(ln) }()
			t.Cleanup(func() { _ = appSrv.Close() })

			cfg := strings.NewReplacer(
				"server_url: http://keycloak:8080", "server_url: "+idpSrv.URL,
				"metrics_listen: 127.0.0.1:9180", "metrics_listen: 127.0.0.1:"+strconv.Itoa(freePort(t)),
				"key_file: assertion-keys.pem", "key_file: "+filepath.Join(t.TempDir(), "assertion-keys.pem"),
			).Replace(ports.rewrite(shipped(t, "idp-proxy-forward-auth.yaml")))
			path := filepath.Join(t.TempDir(), "idp-proxy.yaml")
			if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "serve", "--config", path)
			cmd.Env = append(cleanEnv(), "IDP_PROXY_IDP_CLIENT_SECRET="+clientSecret,
				"IDP_PROXY_IDP_SESSION_SECRET=interop-session-secret-0123456789abcdef", "IDP_PROXY_LOG_FORMAT=json")
			px := startProc(t, "idp-proxy (forward-auth)", cmd)
			waitVerdict(t, px, "http://"+ports.verify+"/auth/verify")

			var ing *proc
			if name == "nginx" {
				dir := t.TempDir()
				_ = os.MkdirAll(filepath.Join(dir, "tmp"), 0o755)
				conf := filepath.Join(dir, "nginx.conf")
				_ = os.WriteFile(conf, []byte(ports.rewrite(shipped(t, "nginx.conf"))), 0o644)
				global := "daemon off;"
				if os.Geteuid() == 0 {
					global += " user root;"
				}
				ing = startProc(t, "nginx", exec.Command(bins[name], "-p", dir, "-c", conf, "-g", global))
			} else {
				caddyfile := filepath.Join(t.TempDir(), "Caddyfile")
				_ = os.WriteFile(caddyfile, []byte(ports.rewrite(shipped(t, "Caddyfile"))), 0o644)
				c := exec.Command(bins[name], "run", "--config", caddyfile, "--adapter", "caddyfile")
				home := t.TempDir()
				c.Env = append(cleanEnv(), "HOME="+home, "XDG_DATA_HOME="+home, "XDG_CONFIG_HOME="+home)
				ing = startProc(t, "caddy", c)
			}
			waitHTTP(t, ing, "http://"+ports.front+"/health", http.StatusOK)

			verifier, err := idp.New(context.Background(), idp.Config{IssuerURL: "http://" + ports.login + "/.idp-proxy",
				ClientID: "shortener", Algorithms: []string{"ES256"}, Claims: idp.ClaimMapping{Preset: idp.PresetGeneric}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = verifier.Close() })

			req, _ := http.NewRequest("POST", "http://"+ports.front+"/shorten", strings.NewReader(`{"url":"https://example.com/a"}`))
			req.Header.Set("Authorization", "Bearer "+alice)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Auth-Request-Assertion", "forged")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			got, body := app.get()
			for k, vals := range got.Header {
				for _, v := range vals {
					if strings.Contains(v, alice) {
						t.Errorf("the app got the caller's token in %s", k)
					}
				}
			}
			if strings.Contains(body, alice) {
				t.Error("the app got the caller's token in the body")
			}
			if v := got.Header.Values("Authorization"); len(v) > 0 && v[0] != "" {
				t.Errorf("Authorization %q reached the app", v)
			}
			a := got.Header.Values("X-Auth-Request-Assertion")
			if len(a) != 1 || a[0] == "forged" {
				t.Fatalf("assertion headers %q", a)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			id, err := verifier.VerifyIdentity(ctx, a[0])
			if err != nil || id.User.Sub != "user-alice" {
				t.Fatalf("the app's verifier: %v", err)
			}

			// A public route without a token: the forged assertion is
			// removed, not passed on.
			req, _ = http.NewRequest("GET", "http://"+ports.front+"/health", nil)
			req.Header.Set("X-Auth-Request-Assertion", "forged")
			if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
				t.Fatalf("public route: %v", err)
			}
			if got, _ := app.get(); got.Header.Get("X-Auth-Request-Assertion") != "" {
				t.Errorf("a client's assertion reached the app: %q", got.Header.Get("X-Auth-Request-Assertion"))
			}
		})
	}
}
