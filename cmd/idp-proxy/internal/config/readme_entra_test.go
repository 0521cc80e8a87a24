package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// The README's Entra ID configuration reads the username a page greets
// from an Entra v2.0 access token: preferred_username, the sign-in name,
// never oid (a GUID).
func TestReadmeEntraSnippetNamesTheUser(t *testing.T) {
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	var snippet string
	for _, m := range yamlBlock.FindAllStringSubmatch(string(b), -1) {
		if strings.HasPrefix(m[1], "# Microsoft Entra ID") {
			snippet = m[1]
		}
	}
	if snippet == "" {
		t.Fatal(`README.md has no YAML block starting "# Microsoft Entra ID"`)
	}
	path := filepath.Join(t.TempDir(), "entra.yaml")
	if err := os.WriteFile(path, []byte(snippet), 0o600); err != nil {
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
	// The snippet's provider stands here as a plain issuer serving the
	// shape of Entra's v2.0 access tokens.
	srv := idptest.NewServer(t, idptest.Options{PlainIssuer: true})
	ic := c.IDP
	ic.IssuerURL, ic.IncludeRoutes, ic.Session = srv.Issuer, false, nil
	p, err := idp.New(t.Context(), ic)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	const oid = "f3b5a9d2-4c1e-4f6a-9b7d-2e8c1a0d5a11"
	tok := srv.Mint(map[string]any{
		"typ": nil, "aud": ic.ClientID, "ver": "2.0", "sub": "AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ",
		"oid": oid, "tid": "00000000-0000-0000-0000-000000000000", "azp": "22222222-2222-2222-2222-222222222222",
		"preferred_username": "alice@contoso.com", "name": "Alice Example", "roles": []any{"Links.Create"}, "scp": "Links.Read",
	})
	id, err := p.VerifyIdentity(t.Context(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if id.User.PreferredUsername != "alice@contoso.com" {
		t.Errorf("the README's Entra configuration reads the username %q, want preferred_username (alice@contoso.com)", id.User.PreferredUsername)
	}
}
