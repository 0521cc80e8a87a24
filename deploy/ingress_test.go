package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/internal/testneed"
)

// ingressTool returns the path of an ingress binary (nginx, caddy). In CI
// (.ci/setup installs them) a missing one fails; elsewhere the check skips
// with a message.
func ingressTool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin"} {
		if p := filepath.Join(dir, name); fileExists(p) {
			return p
		}
	}
	testneed.Skip(t, testneed.EndToEnd, "%s is not installed (apt-get install nginx caddy; .ci/setup installs it): its configuration is not checked", name)
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// The ingress snippets users copy: nginx and Caddy accept them, the
// idp-proxy configuration they go with checks, and they all point at the
// same addresses, the verify path and the identity headers idp-proxy
// sends.
func TestIngressSnippets(t *testing.T) {
	const dir = "ingress"
	bin := idpProxy(t)
	cmd := exec.Command(bin, "check-config", "--no-secrets", filepath.Join(dir, "idp-proxy-forward-auth.yaml"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("idp-proxy check-config of the forward-auth configuration: %v\n%s", err, out)
	}

	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var cfg struct {
		Listen      string `yaml:"listen"`
		ForwardAuth struct {
			Listen string `yaml:"listen"`
		} `yaml:"forward_auth"`
	}
	decodeYAML(t, filepath.Join(dir, "idp-proxy-forward-auth.yaml"), &cfg)
	headers := []string{"X-Auth-Request-User", "X-Auth-Request-Preferred-Username", "X-Auth-Request-Email", "X-Auth-Request-Roles", "X-Auth-Request-Assertion"}
	for _, f := range []string{"nginx.conf", "Caddyfile", "traefik.yaml"} {
		s := read(f)
		if !strings.Contains(s, cfg.ForwardAuth.Listen) || !strings.Contains(s, cfg.Listen) {
			t.Errorf("%s does not use idp-proxy's addresses %s (verdicts) and %s (login routes)", f, cfg.ForwardAuth.Listen, cfg.Listen)
		}
		if !strings.Contains(s, "/auth/verify") {
			t.Errorf("%s does not ask /auth/verify", f)
		}
		for _, h := range headers {
			if !strings.Contains(strings.ToLower(s), strings.ToLower(h)) {
				t.Errorf("%s does not handle %s", f, h)
			}
		}
	}
	for _, f := range []string{"k8s-traefik-middleware.yaml", "k8s-ingress-nginx.yaml"} {
		s := read(f)
		if !regexp.MustCompile(`:4181/auth/verify`).MatchString(s) {
			t.Errorf("%s does not ask idp-proxy's forward-auth port for /auth/verify", f)
		}
		for _, h := range headers {
			if !strings.Contains(s, h) {
				t.Errorf("%s does not copy %s", f, h)
			}
		}
	}

	// nginx -t and caddy validate on the files as shipped.
	nginx := ingressTool(t, "nginx")
	prefix := t.TempDir()
	if err := os.MkdirAll(filepath.Join(prefix, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf, _ := filepath.Abs(filepath.Join(dir, "nginx.conf"))
	if out, err := exec.Command(nginx, "-t", "-q", "-p", prefix, "-c", conf).CombinedOutput(); err != nil {
		t.Errorf("nginx -t: %v\n%s", err, out)
	}
	caddy := ingressTool(t, "caddy")
	c := exec.Command(caddy, "validate", "--config", filepath.Join(dir, "Caddyfile"), "--adapter", "caddyfile")
	c.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	if out, err := c.CombinedOutput(); err != nil {
		t.Errorf("caddy validate: %v\n%s", err, out)
	}
}

// The many-hosts set-up (ingress/many-hosts): its idp-proxy configuration
// checks, and nginx, Caddy and Traefik use its addresses, the verify path,
// the identity headers and the central login host. test/interop's
// TestIngressManyHosts runs nginx and Caddy with these files.
func TestIngressManyHostsFiles(t *testing.T) {
	dir := filepath.Join("ingress", "many-hosts")
	bin := idpProxy(t)
	cmd := exec.Command(bin, "check-config", "--no-secrets", filepath.Join(dir, "idp-proxy.yaml"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("idp-proxy check-config of many-hosts/idp-proxy.yaml: %v\n%s", err, out)
	}
	var cfg struct {
		Listen string `yaml:"listen"`
		IDP    struct {
			RedirectURI          string   `yaml:"redirect_uri"`
			AllowedRedirectHosts []string `yaml:"allowed_redirect_hosts"`
		} `yaml:"idp"`
		Session struct {
			CookieDomain string `yaml:"cookie_domain"`
		} `yaml:"session"`
		ForwardAuth struct {
			Listen string `yaml:"listen"`
		} `yaml:"forward_auth"`
	}
	decodeYAML(t, filepath.Join(dir, "idp-proxy.yaml"), &cfg)
	if cfg.IDP.RedirectURI != "https://login.example.com/auth/callback" || cfg.Session.CookieDomain != "example.com" ||
		!slices.Equal(cfg.IDP.AllowedRedirectHosts, []string{"*.example.com"}) {
		t.Errorf("many-hosts/idp-proxy.yaml: callback %q, cookie domain %q, allowed hosts %v", cfg.IDP.RedirectURI, cfg.Session.CookieDomain, cfg.IDP.AllowedRedirectHosts)
	}
	for _, f := range []string{"nginx.conf", "Caddyfile", "traefik.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for _, want := range []string{cfg.Listen, cfg.ForwardAuth.Listen, "/auth/verify", "login.example.com", "a.example.com", "b.example.com",
			"X-Auth-Request-User", "X-Auth-Request-Preferred-Username", "X-Auth-Request-Email", "X-Auth-Request-Roles"} {
			if !strings.Contains(strings.ToLower(s), strings.ToLower(want)) {
				t.Errorf("many-hosts/%s does not mention %s", f, want)
			}
		}
	}
}
