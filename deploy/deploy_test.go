package deploy_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Docker does not run where these tests run: they check what can be checked
// without it (DESIGN §2): every file parses, the files agree with
// each other and with the repository, and the proxy configurations load and
// pass idp-proxy's own checks.

// yamlDocs decodes every document of a YAML file into a generic value.
func yamlDocs(t *testing.T, path string) []any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []any
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if v != nil {
			docs = append(docs, v)
		}
	}
	if len(docs) == 0 {
		t.Fatalf("%s: no YAML document", path)
	}
	return docs
}

// decodeYAML decodes one YAML document into v (unknown keys ignored).
func decodeYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestEveryFileParses(t *testing.T) {
	var yamls, jsons int
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// A Helm chart's templates are Go templates, not YAML: the
			// rendered manifests are checked in helm_test.go.
			if d.Name() == "templates" && filepath.Base(filepath.Dir(filepath.Dir(path))) == "helm" {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".yaml", ".yml":
			yamls++
			for _, doc := range yamlDocs(t, path) {
				if _, ok := doc.(map[string]any); !ok {
					t.Errorf("%s: a document is %T, want a mapping", path, doc)
				}
			}
		case ".json":
			jsons++
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			var v map[string]any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Errorf("%s: %v", path, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// docker-compose.yml, idp-proxy.yaml, 5 under k8s/; the realm export.
	if yamls < 7 || jsons < 1 {
		t.Fatalf("found %d YAML and %d JSON files, want at least 7 and 1", yamls, jsons)
	}
}

// proxyFile is the part of idp-proxy's effective configuration (as
// `idp-proxy check-config --effective` prints it) that the deploy files
// must agree with.
type proxyFile struct {
	Listen        string `json:"listen"`
	MetricsListen string `json:"metrics_listen"`
	Upstream      struct {
		URL        string `json:"url"`
		Credential string `json:"credential"`
		Audience   string `json:"audience"`
	} `json:"upstream"`
	Assertion struct {
		IssuerURL string `json:"issuer_url"`
		KeyFile   string `json:"key_file"`
		Header    string `json:"header"`
	} `json:"assertion"`
	IDP struct {
		ServerURL         string   `json:"server_url"`
		Realm             string   `json:"realm"`
		ClientID          string   `json:"client_id"`
		RedirectURI       string   `json:"redirect_uri"`
		AuthPrefix        string   `json:"auth_prefix"`
		OptionalAudiences []string `json:"optional_audiences"`
		SessionSecretFile string   `json:"session_secret_file"`
	} `json:"idp"`
	Session struct {
		Enabled               bool   `json:"enabled"`
		Store                 string `json:"store"`
		RedisURL              string `json:"redis_url"`
		PostLogoutRedirectURI string `json:"post_logout_redirect_uri"`
	} `json:"session"`
	Server struct {
		DrainDelay      string `json:"drain_delay"`
		ShutdownTimeout string `json:"shutdown_timeout"`
	} `json:"server"`
	Routes []struct {
		Match       string              `json:"match"`
		Roles       []string            `json:"roles"`
		ClientRoles map[string][]string `json:"client_roles"`
	} `json:"routes"`
}

var (
	idpProxyOnce sync.Once
	idpProxyBin  string
	idpProxyErr  error
)

// idpProxy builds cmd/idp-proxy once for the package's tests.
func idpProxy(t *testing.T) string {
	t.Helper()
	idpProxyOnce.Do(func() {
		dir, err := os.MkdirTemp("", "deploytest-")
		if err != nil {
			idpProxyErr = err
			return
		}
		idpProxyBin = filepath.Join(dir, "idp-proxy")
		out, err := exec.Command("go", "build", "-o", idpProxyBin, "../cmd/idp-proxy").CombinedOutput()
		if err != nil {
			idpProxyErr = fmt.Errorf("go build ./cmd/idp-proxy: %v\n%s", err, out)
		}
	})
	if idpProxyErr != nil {
		t.Fatal(idpProxyErr)
	}
	return idpProxyBin
}

// loadProxyConfig runs idp-proxy's complete check of a config file (no
// network: `check-config`, as an operator would) with env as the only
// IDP_PROXY_* variables, and returns its effective configuration.
func loadProxyConfig(t *testing.T, path string, env []string) proxyFile {
	t.Helper()
	bin := idpProxy(t)
	run := func(args ...string) []byte {
		cmd := exec.Command(bin, args...)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "IDP_PROXY_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("idp-proxy %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return out
	}
	run("check-config", path)
	var cfg proxyFile
	if err := json.Unmarshal(run("check-config", "--effective", path), &cfg); err != nil {
		t.Fatalf("check-config --effective %s: %v", path, err)
	}
	return cfg
}

// The deploy file's secrets arrive at deploy time (environment, mounted
// files): `check-config --no-secrets` checks everything else, with no
// IDP_PROXY_* variable set, as CI runs it.
func TestDeployConfigChecksWithoutSecrets(t *testing.T) {
	bin := idpProxy(t)
	for _, args := range [][]string{
		{"check-config", "--no-secrets", "idp-proxy.yaml"},
		{"check-config", "--no-secrets", "--effective", "idp-proxy.yaml"},
	} {
		cmd := exec.Command(bin, args...)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "IDP_PROXY_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("idp-proxy %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Without --no-secrets the same file is refused: the check is real.
	cmd := exec.Command(bin, "check-config", "idp-proxy.yaml")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "session secret") {
		t.Errorf("check-config without secrets: %v\n%s", err, out)
	}
}

// `make build` stamps the version the binaries print with --version.
func TestMakeBuildStampsVersion(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	out, err := exec.Command("make", "-C", "..", "-n", "build", "VERSION=v1.2.3-test").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n build: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "-X github.com/idp-proxy/idp-proxy/internal/buildinfo.Version=v1.2.3-test") {
		t.Fatalf("make build does not stamp the version:\n%s", out)
	}
}

// hostPort splits an address or URL's host into host and numeric port.
func hostPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		addr = u.Host
		if u.Port() == "" {
			addr += map[string]string{"http": ":80", "https": ":443"}[u.Scheme]
		}
	}
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return h, n
}

// flagValue returns the value of --name=value or --name value in args.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// ---------------------------------------------------------------------------
// Dockerfiles

type instruction struct {
	cmd  string // upper case
	args string
}

// dockerfile parses a Dockerfile into instructions (comments dropped,
// continuation lines joined).
func dockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

func TestDockerfiles(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	wantPorts := map[string][]string{"idp-proxy": {"4180", "9180"}, "shortener": {"8000"}}
	for bin, ports := range wantPorts {
		t.Run(bin, func(t *testing.T) {
			path := "Dockerfile." + bin
			ins := dockerfile(t, path)
			var froms, runs, copies, users, exposes []string
			var entrypoint string
			for _, in := range ins {
				switch in.cmd {
				case "FROM":
					froms = append(froms, in.args)
				case "RUN":
					runs = append(runs, in.args)
				case "COPY":
					copies = append(copies, in.args)
				case "USER":
					users = append(users, in.args)
				case "EXPOSE":
					exposes = append(exposes, strings.Fields(in.args)...)
				case "ENTRYPOINT":
					entrypoint = in.args
				}
			}
			if len(froms) != 2 || !strings.HasPrefix(froms[0], "golang:1.26 AS ") ||
				froms[1] != "gcr.io/distroless/static-debian12:nonroot" {
				t.Errorf("FROM %q: want a golang:1.26 builder and gcr.io/distroless/static-debian12:nonroot", froms)
			}
			build := strings.Join(runs, "\n")
			for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "go build", "./cmd/" + bin} {
				if !strings.Contains(build, want) {
					t.Errorf("no RUN has %q", want)
				}
			}
			if _, err := os.Stat(filepath.Join(root, "cmd", bin, "main.go")); err != nil {
				t.Errorf("the build target does not exist: %v", err)
			}
			if !slices.Contains(users, "nonroot:nonroot") && !slices.Contains(users, "65532:65532") {
				t.Errorf("USER %q, want nonroot", users)
			}
			var argv []string
			if err := json.Unmarshal([]byte(entrypoint), &argv); err != nil || len(argv) == 0 {
				t.Errorf("ENTRYPOINT %q must be exec form (the image has no shell)", entrypoint)
			}
			ignore, err := os.ReadFile(path + ".dockerignore")
			if err != nil {
				t.Fatalf("the Dockerfile's ignore file: %v", err)
			}
			installed := false
			for _, c := range copies {
				f := strings.Fields(c)
				var from bool
				for len(f) > 0 && strings.HasPrefix(f[0], "--") {
					from = from || strings.HasPrefix(f[0], "--from=")
					f = f[1:]
				}
				if len(f) < 2 {
					t.Errorf("COPY %q", c)
					continue
				}
				if from {
					installed = installed || (len(argv) > 0 && f[len(f)-1] == argv[0])
					continue
				}
				for _, src := range f[:len(f)-1] {
					if _, err := os.Stat(filepath.Join(root, src)); err != nil {
						t.Errorf("COPY source %s: %v", src, err)
					}
					if !strings.Contains(string(ignore), "!"+src) {
						t.Errorf("%s.dockerignore excludes the COPY source %s", path, src)
					}
				}
			}
			if !installed {
				t.Errorf("ENTRYPOINT %v is not the binary copied from the builder", argv)
			}
			for _, p := range ports {
				if !slices.Contains(exposes, p) {
					t.Errorf("EXPOSE %v lacks %s", exposes, p)
				}
			}
		})
	}
	if hadolint, err := exec.LookPath("hadolint"); err == nil {
		for bin := range wantPorts {
			if out, err := exec.Command(hadolint, "Dockerfile."+bin).CombinedOutput(); err != nil {
				t.Errorf("hadolint Dockerfile.%s: %v\n%s", bin, err, out)
			}
		}
	} else {
		t.Log("hadolint not installed: Dockerfile lint skipped")
	}
}

// TestDockerBuildContext builds both binaries the way the Dockerfiles do
// (CGO_ENABLED=0, -trimpath, the version -X flag) from a copy of only what
// the Dockerfiles' ignore files let into the build context, then runs
// `version`: it catches a context that lacks a file the build needs and a
// wrong -X path.
func TestDockerBuildContext(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both binaries: skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not on PATH")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	ctxDir := t.TempDir()
	for _, f := range []string{"go.mod", "go.sum"} {
		copyFile(t, filepath.Join(root, f), filepath.Join(ctxDir, f))
	}
	for _, dir := range []string{"cmd", "internal", "pkg"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(p, "_test.go") {
				return nil
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			copyFile(t, p, filepath.Join(ctxDir, rel))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	const version = "v9.9.9-deploytest"
	for _, bin := range []string{"idp-proxy", "shortener"} {
		args := []string{"build", "-trimpath",
			"-ldflags=-s -w -X github.com/idp-proxy/idp-proxy/internal/buildinfo.Version=" + version,
			"-o", filepath.Join(out, bin), "./cmd/" + bin}
		cmd := exec.Command(goTool, args...)
		cmd.Dir = ctxDir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in the Docker build context: %v\n%s", strings.Join(args, " "), err, b)
		}
		b, err := exec.Command(filepath.Join(out, bin), "version").CombinedOutput()
		if err != nil || !strings.Contains(string(b), version) {
			t.Errorf("%s version: %q (%v), want %s", bin, b, err, version)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
