package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const readmePath = "../../../../README.md"

// yamlBlock is a fenced YAML block of the README.
var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// TestReadmeProviderSnippets loads and compiles every configuration of the
// README's "Providers" section, as `idp-proxy check-config` would: each
// is a complete file that users copy.
func TestReadmeProviderSnippets(t *testing.T) {
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Providers\n")
	if !ok {
		t.Fatal(`README.md has no "## Providers" section`)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	blocks := yamlBlock.FindAllStringSubmatch(section, -1)
	if len(blocks) < 10 {
		t.Fatalf("the Providers section has %d YAML blocks, want one per provider (10)", len(blocks))
	}
	dir := t.TempDir()
	for i, m := range blocks {
		name, _, _ := strings.Cut(strings.TrimPrefix(m[1], "# "), "\n")
		path := filepath.Join(dir, "provider.yaml")
		if err := os.WriteFile(path, []byte(m[1]), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := Load(path, LoadOptions{})
		if err == nil {
			_, err = Compile(f, CompileOptions{})
		}
		if err != nil {
			t.Errorf("README Providers block %d (%s): %v", i+1, name, err)
		}
	}
}

// TestReadmeManyAppsSnippet loads and compiles the configuration of the
// README's "Many apps behind one sign-in" section (its secrets come from
// the environment in a real deployment: not checked here).
func TestReadmeManyAppsSnippet(t *testing.T) {
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Many apps behind one sign-in\n")
	if !ok {
		t.Fatal(`README.md has no "## Many apps behind one sign-in" section`)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	blocks := yamlBlock.FindAllStringSubmatch(section, -1)
	if len(blocks) != 1 {
		t.Fatalf("the section has %d YAML blocks, want 1", len(blocks))
	}
	path := filepath.Join(t.TempDir(), "many-apps.yaml")
	if err := os.WriteFile(path, []byte(blocks[0][1]), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(f, CompileOptions{NoSecrets: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Upstreams) != 4 || c.IDP.Session == nil || c.IDP.Session.CookieDomain != "example.com" {
		t.Errorf("upstreams %d, session %+v", len(f.Upstreams), c.IDP.Session)
	}
}

// TestReadmeGRPCSnippet loads and compiles the configuration of the
// README's "gRPC" section.
func TestReadmeGRPCSnippet(t *testing.T) {
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## gRPC\n")
	if !ok {
		t.Fatal(`README.md has no "## gRPC" section`)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	blocks := yamlBlock.FindAllStringSubmatch(section, -1)
	if len(blocks) != 1 {
		t.Fatalf("the section has %d YAML blocks, want 1", len(blocks))
	}
	path := filepath.Join(t.TempDir(), "grpc.yaml")
	if err := os.WriteFile(path, []byte(blocks[0][1]), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compile(f, CompileOptions{}); err != nil {
		t.Fatal(err)
	}
	if !f.Server.H2C || f.Upstream.Protocol != "h2c" || f.Upstream.StreamTimeout != 30*time.Minute {
		t.Errorf("server %+v, upstream %+v", f.Server, f.Upstream)
	}
}
