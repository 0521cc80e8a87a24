package deploy_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestManyAppsCompose: many-apps/docker-compose.yml (three apps on their
// own hosts behind Caddy and one idp-proxy) parses, mounts its files, and
// agrees with its idp-proxy configuration, which checks; Caddy serves
// every host of the configuration; the realm accepts its callback.
func TestManyAppsCompose(t *testing.T) {
	dir := "many-apps"
	var c composeFile
	decodeYAML(t, filepath.Join(dir, "docker-compose.yml"), &c)
	for _, s := range []string{"keycloak", "shortener", "whoami", "admin", "idp-proxy", "caddy"} {
		if _, ok := c.Services[s]; !ok {
			t.Errorf("service %s is missing", s)
		}
	}
	px := c.Services["idp-proxy"]
	if !slices.Contains(px.Volumes, "./idp-proxy.yaml:/etc/idp-proxy/config.yaml:ro") || px.Environment["IDP_PROXY_IDP_SESSION_SECRET"] == "" {
		t.Errorf("idp-proxy: volumes %v, environment %v", px.Volumes, px.Environment)
	}
	if !slices.Contains(c.Services["caddy"].Volumes, "./Caddyfile:/etc/caddy/Caddyfile:ro") || !slices.Contains(c.Services["caddy"].Ports, "8443:8443") {
		t.Errorf("caddy: volumes %v, ports %v", c.Services["caddy"].Volumes, c.Services["caddy"].Ports)
	}
	if !slices.Contains(c.Services["keycloak"].Volumes, "../keycloak:/opt/keycloak/data/import:ro") {
		t.Errorf("keycloak does not import the demo realm: %v", c.Services["keycloak"].Volumes)
	}

	bin := idpProxy(t)
	cmd := exec.Command(bin, "check-config", "--no-secrets", "--effective", filepath.Join(dir, "idp-proxy.yaml"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("check-config: %v\n%s", err, out)
	}
	var eff struct {
		Listen    string `json:"listen"`
		Upstreams []struct {
			Match      string `json:"match"`
			URL        string `json:"url"`
			Credential string `json:"credential"`
			Audience   string `json:"audience"`
		} `json:"upstreams"`
		Assertion struct {
			IssuerURL string `json:"issuer_url"`
			KeyFile   string `json:"key_file"`
		} `json:"assertion"`
		IDP struct {
			RedirectURI string `json:"redirect_uri"`
		} `json:"idp"`
	}
	if err := json.Unmarshal(out, &eff); err != nil {
		t.Fatalf("check-config --effective: %v\n%s", err, out)
	}
	caddyfile, err := os.ReadFile(filepath.Join(dir, "Caddyfile"))
	if err != nil {
		t.Fatal(err)
	}
	hosts := []string{"login.apps.localhost"}
	_, listenPort := hostPort(t, eff.Listen)
	for _, u := range eff.Upstreams {
		hosts = append(hosts, strings.TrimSuffix(u.Match, "/"))
		svc, _, _ := strings.Cut(strings.TrimPrefix(u.URL, "http://"), ":")
		if u.Match != "shortener.apps.localhost/" {
			if _, ok := c.Services[svc]; !ok {
				t.Errorf("upstream %s goes to %s, not a service of the compose file", u.Match, u.URL)
			}
			continue
		}
		// The shortener, on the proxy's loopback in its namespace, which
		// verifies the assertion the proxy signs for it.
		sh := c.Services["shortener"]
		if listen, _ := flagValue(sh.Command, "listen"); sh.NetworkMode != "service:idp-proxy" || "http://"+listen != u.URL {
			t.Errorf("upstream %s goes to %s: want the shortener in idp-proxy's network namespace listening there (network_mode %q, --listen %q)",
				u.Match, u.URL, sh.NetworkMode, listen)
		}
		var cfg proxyFile
		cfg.Upstream.Credential, cfg.Upstream.Audience, cfg.Assertion.IssuerURL = u.Credential, u.Audience, eff.Assertion.IssuerURL
		checkShortenerVerifies(t, sh.Command, cfg, "localhost", listenPort)
	}
	// One replica: its assertion key may be generated at start, into a
	// writable named volume that keeps it across restarts.
	keyVolume := ""
	for _, v := range px.Volumes {
		if parts := strings.Split(v, ":"); len(parts) == 2 && parts[1] == filepath.Dir(eff.Assertion.KeyFile) {
			keyVolume = parts[0]
		}
	}
	if _, ok := c.Volumes[keyVolume]; !ok || eff.Assertion.KeyFile == "" {
		t.Errorf("assertion.key_file %q is not in a writable named volume of idp-proxy: %v", eff.Assertion.KeyFile, px.Volumes)
	}
	if len(eff.Upstreams) != 3 {
		t.Errorf("%d upstreams, want the three apps", len(eff.Upstreams))
	}
	for _, h := range hosts {
		if !strings.Contains(string(caddyfile), "https://"+h+":8443") {
			t.Errorf("the Caddyfile does not serve %s", h)
		}
	}
	var realm struct {
		Clients []struct {
			ClientID     string   `json:"clientId"`
			RedirectURIs []string `json:"redirectUris"`
		} `json:"clients"`
	}
	b, err := os.ReadFile(filepath.Join("keycloak", "realm-demo.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &realm); err != nil {
		t.Fatal(err)
	}
	var registered bool
	for _, cl := range realm.Clients {
		if cl.ClientID == "shortener" && slices.Contains(cl.RedirectURIs, eff.IDP.RedirectURI) {
			registered = true
		}
	}
	if eff.IDP.RedirectURI == "" || !registered {
		t.Errorf("the realm's client shortener does not register the callback %q", eff.IDP.RedirectURI)
	}
	// caddy validate on the Caddyfile as shipped (tls internal: no
	// certificate file needed).
	caddy := ingressTool(t, "caddy")
	v := exec.Command(caddy, "validate", "--config", filepath.Join(dir, "Caddyfile"), "--adapter", "caddyfile")
	v.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	if out, err := v.CombinedOutput(); err != nil {
		t.Errorf("caddy validate many-apps/Caddyfile: %v\n%s", err, out)
	}
}
