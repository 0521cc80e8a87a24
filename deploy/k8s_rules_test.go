package deploy_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
	"github.com/idp-proxy/idp-proxy/pkg/proxy"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/memstore"
)

// checkPlaceholderRefused runs idp-proxy's check of the config file with
// the example's placeholder as the mounted session secret: it must refuse
// it, as it would at the pod's start.
func checkPlaceholderRefused(t *testing.T, cfgFile, dir, placeholder string) {
	t.Helper()
	session := filepath.Join(dir, "placeholder-session-secret")
	client := filepath.Join(dir, "placeholder-client-secret")
	if err := os.WriteFile(session, []byte(placeholder+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(client, []byte("client-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(idpProxy(t), "check-config", cfgFile)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"),
		"IDP_PROXY_IDP_SESSION_SECRET_FILE=" + session, "IDP_PROXY_IDP_CLIENT_SECRET_FILE=" + client}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "placeholder") {
		t.Errorf("check-config with secret.example.yaml's session secret %q: %v\n%s\nwant a refusal naming the placeholder", placeholder, err, out)
	}
}

// checkRoutesReachable judges every route the shortener serves (with its
// page, as the Deployment runs it) by the ConfigMap's rules, for a
// signed-in user with the realm role creator: none may be refused
// (default_policy: deny made the page and /links 403).
func checkRoutesReachable(t *testing.T, configYAML string) {
	t.Helper()
	var f struct {
		Routes        []proxy.RouteConfig `yaml:"routes"`
		DefaultPolicy string              `yaml:"default_policy"`
	}
	if err := yaml.Unmarshal([]byte(configYAML), &f); err != nil {
		t.Fatal(err)
	}
	provider := idptest.NewServer(t, idptest.Options{Realm: "demo"})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	plugin, err := idp.New(ctx, idp.Config{ServerURL: provider.URL, Realm: "demo", ClientID: "shortener"})
	if err != nil {
		t.Fatal(err)
	}
	defer plugin.Close()
	if err := plugin.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := proxy.DefaultConfig()
	cfg.Upstream.URL = "http://127.0.0.1:8000"
	cfg.Routes, cfg.DefaultPolicy = f.Routes, f.DefaultPolicy
	px, err := proxy.New(plugin, cfg, proxy.Options{})
	if err != nil {
		t.Fatalf("the ConfigMap's rules: %v", err)
	}
	svc, err := shortener.New(memstore.New(), shortener.Options{CustomCodes: true})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(context.Background())
	h, err := shortener.NewHandler(svc, shortener.HandlerOptions{Page: true, LogoutURL: "/auth/logout"})
	if err != nil {
		t.Fatal(err)
	}
	token := provider.Mint(provider.UserClaims("shortener", "alice", "creator"))
	for _, r := range h.Routes() {
		target := strings.ReplaceAll(strings.Replace(r.Pattern, "{$}", "", 1), "{code}", "Abc1234")
		d, err := px.Decide(ctx, r.Method, target, token)
		if err != nil {
			t.Fatal(err)
		}
		if d.Decision != "allowed" && d.Decision != "public" {
			t.Errorf("%s %s: %s by %s (status %d): the ConfigMap's rules refuse a route the shortener serves to a signed-in creator",
				r.Method, target, d.Decision, d.Rule, d.Status)
		}
	}
}
