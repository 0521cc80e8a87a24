package interop_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// DPoP (RFC 9449) through real nginx and Caddy running the shipped files
// in front of idp-proxy's forward-auth: a DPoP-bound token (Keycloak's
// shape, from idptest) with its proof passes, the app receiving the proof
// and the key's thumbprint; the same proof replayed is refused 401
// invalid_dpop_proof (RFC 9449 §4.3 step 11, §11.1), as is a proof for
// another URL (§4.3 step 9). The verdict checks the proof against the
// original method and URL the ingress describes.
func TestIngressDPoP_RFC9449_4_3(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	nginxBin := ingressBin(t, "nginx")
	caddyBin := ingressBin(t, "caddy")
	_, bin := binaries(t)
	provider := idptest.NewServer(t)

	var mu sync.Mutex
	var got []http.Header
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(app.Close)
	last := func() http.Header {
		mu.Lock()
		defer mu.Unlock()
		if len(got) == 0 {
			t.Fatal("the app received nothing")
		}
		return got[len(got)-1]
	}

	port := func() string { return "127.0.0.1:" + strconv.Itoa(freePort(t)) }
	appAddr := strings.TrimPrefix(app.URL, "http://")
	nginxPorts := ingressPorts{front: port(), login: port(), verify: port(), app: appAddr}
	caddyPorts := ingressPorts{front: port(), login: port(), verify: port(), app: appAddr}
	for _, ports := range []ingressPorts{nginxPorts, caddyPorts} {
		cfg := ports.rewrite(shipped(t, "idp-proxy-forward-auth.yaml"))
		cfg = strings.NewReplacer(
			"server_url: http://keycloak:8080", "server_url: "+provider.URL,
			"metrics_listen: 127.0.0.1:9180", "metrics_listen: \"\"",
			// Not the shipped relative path: the test must not write into the tree.
			"key_file: assertion-keys.pem", "key_file: "+filepath.Join(t.TempDir(), "assertion-keys.pem"),
			"routes:\n", "routes:\n  - match: /dpop/\n    dpop: required\n",
			// The shipped file gives the app an assertion instead of the
			// token; this test is about the token and its proof going on.
			"credential: assertion", "credential: forward",
			"audience: shortener", "",
		).Replace(cfg)
		path := filepath.Join(t.TempDir(), "idp-proxy.yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "serve", "--config", path)
		cmd.Env = append(cleanEnv(), "IDP_PROXY_IDP_CLIENT_SECRET=unused",
			"IDP_PROXY_IDP_SESSION_SECRET=interop-session-secret-0123456789abcdef", "IDP_PROXY_LOG_FORMAT=json")
		waitVerdict(t, startProc(t, "idp-proxy (forward-auth)", cmd), "http://"+ports.verify+"/auth/verify")
	}

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
		global += " user root;"
	}
	ng := startProc(t, "nginx", exec.Command(nginxBin, "-p", dir, "-c", conf, "-g", global))
	waitHTTP(t, ng, "http://"+nginxPorts.front+"/health", http.StatusOK)
	caddyfile := filepath.Join(t.TempDir(), "Caddyfile")
	if err := os.WriteFile(caddyfile, []byte(caddyPorts.rewrite(shipped(t, "Caddyfile"))), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(caddyBin, "run", "--config", caddyfile, "--adapter", "caddyfile")
	home := t.TempDir()
	cmd.Env = append(cleanEnv(), "HOME="+home, "XDG_DATA_HOME="+home, "XDG_CONFIG_HOME="+home)
	cd := startProc(t, "caddy", cmd)
	waitHTTP(t, cd, "http://"+caddyPorts.front+"/health", http.StatusOK)

	key := idptest.NewDPoPKey()
	tok := provider.MintDPoP(provider.UserClaims("shortener", "alice", "creator"), key, true)
	for name, ports := range map[string]ingressPorts{"nginx": nginxPorts, "caddy": caddyPorts} {
		t.Run(name, func(t *testing.T) {
			url := "http://" + ports.front + "/dpop/x"
			send := func(proof string) *http.Response {
				req, _ := http.NewRequest("GET", url+"?q=1", nil)
				req.Header.Set("Authorization", "DPoP "+tok)
				req.Header.Set("DPoP", proof)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp
			}
			proof := key.Proof("GET", url, tok)
			if resp := send(proof); resp.StatusCode != 200 {
				t.Fatalf("bound token with its proof: %d %q", resp.StatusCode, resp.Header.Values("WWW-Authenticate"))
			}
			h := last()
			if h.Get("X-Auth-Request-Dpop-Jkt") != key.JKT || h.Get("Dpop") != proof || h.Get("Authorization") != "DPoP "+tok {
				t.Fatalf("the app got jkt %q, DPoP %q, Authorization %.20q", h.Get("X-Auth-Request-Dpop-Jkt"), h.Get("Dpop"), h.Get("Authorization"))
			}
			for what, p := range map[string]string{"replayed proof": proof, "proof for another URL": key.Proof("GET", url+"/other", tok)} {
				resp := send(p)
				if ch := strings.Join(resp.Header.Values("WWW-Authenticate"), " "); resp.StatusCode != 401 || !strings.Contains(ch, "invalid_dpop_proof") {
					t.Fatalf("%s: %d %q, want 401 invalid_dpop_proof", what, resp.StatusCode, ch)
				}
			}
		})
	}
}
