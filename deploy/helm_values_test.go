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

// Values that would put a secret in a ConfigMap, misspell a key, or run
// the shortener trusting identity headers from any pod are refused at
// install time, naming the value, by the values schemas or the templates.
func TestHelmValuesRefused(t *testing.T) {
	proxy := helmCase{chart: "idp-proxy", example: "minimal.yaml"}.args()
	shortener := helmCase{chart: "shortener", example: "postgres.yaml"}.args()
	for _, c := range []struct {
		chart string
		args  []string
		set   string
		want  string
	}{
		{"idp-proxy", proxy, "config.idp.client_secret=s3cret", "client_secret"},
		{"idp-proxy", proxy, "config.idp.session_secret_file=/tmp/s", "session_secret_file"},
		{"idp-proxy", proxy, "config.session.redis_url=redis://:pw@redis:6379/0", "redis_url"},
		{"idp-proxy", proxy, "config.listen=127.0.0.1:4180", "listen"},
		{"idp-proxy", proxy, "config.upstreem.url=http://app:8080", "upstreem"},
		{"idp-proxy", proxy, "config.session.store=memcached", "store"},
		{"idp-proxy", proxy, "config.idp.client_id=", "client_id"},
		{"idp-proxy", proxy, "redis.url=http://redis:6379", "url"},
		{"idp-proxy", proxy, "app.enabled=true", "app.image.repository"},
		{"idp-proxy", proxy, "config.assertion.key_file=/tmp/k.pem", "key_file"},
		{"shortener", shortener, "trustIssuer=,trustIdentityHeaders=true,networkPolicy.enabled=false", "trustIdentityHeaders"},
		{"shortener", shortener, "trustAudience=", "trustAudience"},
		{"shortener", shortener, "store.existingSecret=", "store"},
		{"shortener", shortener, "store.url=mysql://db/links", "url"},
	} {
		t.Run(c.set, func(t *testing.T) {
			args := append([]string{"template", "x", filepath.Join("helm", c.chart)}, c.args...)
			_, err := runHelm(t, append(args, "--set", c.set)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("helm template with %s: %v; want a refusal naming %s", c.set, err, c.want)
			}
		})
	}
}

// chartManagedKeys are the configuration keys the idp-proxy chart sets
// itself (the listeners, from containerPorts; the secrets, from Secrets):
// values.schema.json refuses them under config.
var chartManagedKeys = []string{
	"listen", "metrics_listen",
	"idp.client_secret", "idp.client_secret_file", "idp.session_secret", "idp.session_secret_file",
	"session.redis_url", "assertion.key_file",
}

// The schema of config: names every key idp-proxy reads (two levels deep,
// as check-config --effective prints them) but those the chart sets, so
// that a key added to idp-proxy is either added to the chart or refused
// by this test, never refused at install by a stale schema unnoticed.
func TestHelmSchemaCoversConfig(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("helm", "idp-proxy", "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	type node struct {
		Properties           map[string]node `json:"properties"`
		AdditionalProperties *bool           `json:"additionalProperties"`
	}
	var schema node
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	config := schema.Properties["config"]
	var inSchema []string
	for k, v := range config.Properties {
		inSchema = append(inSchema, k)
		for kk := range v.Properties {
			inSchema = append(inSchema, k+"."+kk)
		}
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	minimal := "upstream: {url: http://app:8080}\nidp: {server_url: https://sso.example.com, realm: demo, client_id: app}\n"
	if err := os.WriteFile(file, []byte(minimal), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(idpProxy(t), "check-config", "--no-secrets", "--effective", file).Output()
	if err != nil {
		t.Fatalf("check-config --effective: %v", err)
	}
	var effective map[string]any
	if err := json.Unmarshal(out, &effective); err != nil {
		t.Fatal(err)
	}
	var read []string
	for k, v := range effective {
		read = append(read, k)
		if m, ok := v.(map[string]any); ok {
			if p, ok := config.Properties[k]; !ok || p.AdditionalProperties == nil || *p.AdditionalProperties {
				t.Errorf("values.schema.json: config.%s must list its keys (additionalProperties: false), so that a misspelt key is refused at install", k)
			}
			for kk := range m {
				read = append(read, k+"."+kk)
			}
		}
	}
	if config.AdditionalProperties == nil || *config.AdditionalProperties {
		t.Error("values.schema.json: config must refuse unknown keys (additionalProperties: false)")
	}
	for _, k := range read {
		managed := slices.Contains(chartManagedKeys, k)
		switch {
		case managed && slices.Contains(inSchema, k):
			t.Errorf("values.schema.json allows config.%s, which the chart sets (or which would put a secret in the ConfigMap)", k)
		case !managed && !slices.Contains(inSchema, k):
			t.Errorf("idp-proxy reads %s, which deploy/helm/idp-proxy/values.schema.json does not allow under config: add it", k)
		}
	}
	for _, k := range inSchema {
		if !slices.Contains(read, k) {
			t.Errorf("values.schema.json allows config.%s, which idp-proxy does not read", k)
		}
	}
}

// Standalone, the two charts' examples fit together: idp-proxy's upstream
// is the shortener's Service, and the shortener's NetworkPolicy admits
// idp-proxy's pods.
func TestHelmStandalonePair(t *testing.T) {
	proxyCase := helmCase{chart: "idp-proxy", release: "idp-proxy", example: "minimal.yaml"}
	shortCase := helmCase{chart: "shortener", release: "shortener", example: "postgres.yaml"}
	proxy := helmTemplate(t, proxyCase.release, filepath.Join("helm", "idp-proxy"), proxyCase.args()...)
	short := helmTemplate(t, shortCase.release, filepath.Join("helm", "shortener"), shortCase.args()...)

	var cfg struct {
		Upstream struct {
			URL string `yaml:"url"`
		} `yaml:"upstream"`
	}
	decodeYAMLString(t, only(t, proxy, "ConfigMap").Data["config.yaml"], &cfg)
	host, port := hostPort(t, cfg.Upstream.URL)
	var svc serviceSpec
	svcObj := only(t, short, "Service")
	if err := svcObj.Spec.Decode(&svc); err != nil {
		t.Fatal(err)
	}
	if host != svcObj.Metadata.Name || len(svc.Ports) != 1 || svc.Ports[0].Port != port {
		t.Errorf("idp-proxy's upstream.url %s is not the shortener's Service %s %+v", cfg.Upstream.URL, svcObj.Metadata.Name, svc.Ports)
	}
	spec, _ := renderedPod(t, proxy)
	if from := networkPolicyFrom(t, short); !selects(from, spec.Template.Metadata.Labels) {
		t.Errorf("the shortener's NetworkPolicy admits pods %v, not idp-proxy's %v", from, spec.Template.Metadata.Labels)
	}
}

// The README's Helm section runs as written: its shell blocks run with
// helm install as helm template (no cluster here) and kubectl as a no-op,
// and name the helm release these tests use.
func TestHelmReadmeCommands(t *testing.T) {
	requireHelm(t)
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Helm\n")
	if !ok {
		t.Fatal(`README.md has no "## Helm" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, version, _ := strings.Cut(helmModule, "@")
	for _, m := range strings.Split(section, "helm.sh/helm/v3/cmd/helm@")[1:] {
		if !strings.HasPrefix(m, version+" ") {
			t.Errorf("README's Helm section runs helm@%s, want %s (as CI)", strings.Fields(m)[0], version)
		}
	}
	var blocks []string
	for rest := section; ; {
		_, after, ok := strings.Cut(rest, "```sh\n")
		if !ok {
			break
		}
		block, tail, _ := strings.Cut(after, "```")
		blocks = append(blocks, block)
		rest = tail
	}
	if len(blocks) < 2 {
		t.Fatalf("README's Helm section: %d sh blocks, want the install and the lint commands", len(blocks))
	}
	prelude := `set -eu
helm() {
  case "$1" in
    install) shift; set -- template "$@" ;;
    upgrade) shift; [ "$1" = --install ] && shift; set -- template "$@" ;;
  esac
  if [ -n "${HELM_BIN:-}" ]; then "$HELM_BIN" "$@"; else go run ` + helmModule + ` "$@"; fi >/dev/null
}
kubectl() { :; }
`
	for i, block := range blocks {
		if !strings.Contains(block, "helm") {
			continue
		}
		cmd := exec.Command("bash", "-c", prelude+block)
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "KEYCLOAK_CLIENT_SECRET=test-client-secret", "HELM_BIN="+helmBin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("README Helm block %d:\n%s\n%v\n%.2000s", i+1, block, err, out)
		}
	}
}
