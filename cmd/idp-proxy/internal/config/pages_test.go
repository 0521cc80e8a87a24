package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmePagesSnippets loads and compiles each configuration of the
// README's "Your own pages" section (over a minimal file, from the
// repository's root, where its paths lead to examples/pages), as
// check-config would.
func TestReadmePagesSnippets(t *testing.T) {
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Your own pages\n")
	if !ok {
		t.Fatal(`README.md has no "## Your own pages" section`)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	blocks := yamlBlock.FindAllStringSubmatch(section, -1)
	if len(blocks) != 2 {
		t.Fatalf("the section has %d YAML blocks, want 2", len(blocks))
	}
	path := filepath.Join(t.TempDir(), "pages.yaml")
	t.Chdir("../../../..")
	for i, m := range blocks {
		if err := os.WriteFile(path, []byte(minimalYAML+m[1]), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := Load(path, LoadOptions{})
		if err != nil {
			t.Fatalf("block %d: %v", i+1, err)
		}
		c, err := Compile(f, CompileOptions{})
		if err != nil {
			t.Fatalf("block %d: %v", i+1, err)
		}
		if c.IDP.Pages == nil || f.Pages.Name != "Example Corp" {
			t.Errorf("block %d: no pages compiled: %+v", i+1, f.Pages)
		}
	}
}

// An empty pages section is the built-in page (nil), and a section of
// colours alone is loaded.
func TestPagesSection(t *testing.T) {
	f, err := Load(writeFile(t, "c.yaml", minimalYAML), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(f, CompileOptions{})
	if err != nil || c.IDP.Pages != nil {
		t.Fatalf("no pages section: %v, pages %v", err, c.IDP.Pages)
	}
	f, err = Load(writeFile(t, "c.yaml", minimalYAML+"pages: {dark_colors: {panel: \"#222\"}}\n"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c, err = Compile(f, CompileOptions{}); err != nil || c.IDP.Pages == nil {
		t.Fatalf("colours alone: %v", err)
	}
	f, err = Load(writeFile(t, "c.yaml", minimalYAML), LoadOptions{Env: []string{"IDP_PROXY_PAGES_DIR=" + filepath.Join(t.TempDir(), "absent")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = Compile(f, CompileOptions{}); err == nil || !strings.Contains(err.Error(), "IDP_PROXY_PAGES_DIR") {
		t.Errorf("a directory from the environment, absent: %v", err)
	}
}
