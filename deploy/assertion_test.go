package deploy_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// assertionKeyFile returns assertion.key_file of a proxy config.
func assertionKeyFile(t *testing.T, configYAML string) string {
	t.Helper()
	var f struct {
		Assertion struct {
			KeyFile string `yaml:"key_file"`
		} `yaml:"assertion"`
	}
	if err := yaml.Unmarshal([]byte(configYAML), &f); err != nil {
		t.Fatal(err)
	}
	return f.Assertion.KeyFile
}

// writeAssertionKey writes a new P-256 key as PEM PKCS #8, what
// `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256` makes.
func writeAssertionKey(t *testing.T, file string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// k8sAssertionKey checks that the ConfigMap's assertion.key_file is a
// file of the mounted Secret (shared by every replica, not generated per
// pod), that the example Secret's placeholder for it is refused at load,
// and returns the environment that points idp-proxy at a generated
// stand-in.
func k8sAssertionKey(t *testing.T, cfgFile, dir, configYAML, secretDir string, secret k8sObject, otherEnv []string) []string {
	t.Helper()
	keyPath := assertionKeyFile(t, configYAML)
	if keyPath == "" || path.Dir(keyPath) != secretDir {
		t.Errorf("assertion.key_file %q is not in the Secret's mount %s: the replicas must share one key", keyPath, secretDir)
		return nil
	}
	placeholder, ok := secret.StringData[path.Base(keyPath)]
	if !ok {
		t.Errorf("assertion.key_file: Secret %s has no key %s", secret.Metadata.Name, path.Base(keyPath))
		return nil
	}
	bad := filepath.Join(dir, "placeholder-assertion-keys")
	if err := os.WriteFile(bad, []byte(placeholder+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(idpProxy(t), "check-config", cfgFile)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "IDP_PROXY_ASSERTION_KEY_FILE=" + bad}, otherEnv...)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "assertion.key_file") {
		t.Errorf("check-config with secret.example.yaml's assertion key %q: %v\n%s\nwant a refusal naming assertion.key_file", placeholder, err, out)
	}
	local := filepath.Join(dir, path.Base(keyPath))
	writeAssertionKey(t, local)
	return []string{"IDP_PROXY_ASSERTION_KEY_FILE=" + local}
}

// checkShortenerVerifies: the proxy signs an assertion for the shortener
// (credential: assertion with an audience) and the shortener verifies it
// with --trust-issuer (the proxy's assertion.issuer_url, which must be on
// issuerHost at the proxy's listen port) and --trust-audience (the
// upstream's audience), never trusting identity headers.
func checkShortenerVerifies(t *testing.T, args []string, cfg proxyFile, issuerHost string, listenPort int) {
	t.Helper()
	if slices.Contains(args, "--trust-identity-headers") {
		t.Errorf("shortener trusts identity headers: %v", args)
	}
	if cfg.Upstream.Credential != "assertion" || cfg.Upstream.Audience == "" {
		t.Errorf("upstream credential %q audience %q: want assertion with an audience", cfg.Upstream.Credential, cfg.Upstream.Audience)
	}
	issuer, _ := flagValue(args, "trust-issuer")
	audience, _ := flagValue(args, "trust-audience")
	if issuer != cfg.Assertion.IssuerURL || audience != cfg.Upstream.Audience {
		t.Errorf("shortener --trust-issuer %q --trust-audience %q, want the proxy's assertion.issuer_url %q and upstream.audience %q",
			issuer, audience, cfg.Assertion.IssuerURL, cfg.Upstream.Audience)
	}
	if h, p := hostPort(t, issuer); h != issuerHost || p != listenPort {
		t.Errorf("assertion issuer %s: want %s:%d, the proxy as the shortener reaches it", issuer, issuerHost, listenPort)
	}
}
