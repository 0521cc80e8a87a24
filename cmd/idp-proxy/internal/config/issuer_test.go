package config

import (
	"errors"
	"strings"
	"testing"
)

// The provider is named by idp.issuer_url or by the Keycloak shorthand
// idp.server_url + idp.realm: exactly one of the two forms.

func TestIssuerURLLoadsFromFileAndEnvironment(t *testing.T) {
	const yaml = `
upstream: {url: "http://127.0.0.1:8000"}
idp: {issuer_url: "https://example.okta.com/oauth2/default", client_id: shortener}
`
	c, err := Load(writeFile(t, "c.yaml", yaml), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Compile(c, CompileOptions{})
	if err != nil {
		t.Fatalf("issuer_url alone: %v", err)
	}
	if got.IDP.IssuerURL != "https://example.okta.com/oauth2/default" || got.IDP.Issuer() != got.IDP.IssuerURL {
		t.Fatalf("IDP = %+v", got.IDP)
	}
	c, err = Load("", LoadOptions{Env: []string{
		"IDP_PROXY_UPSTREAM_URL=http://127.0.0.1:8000",
		"IDP_PROXY_IDP_ISSUER_URL=https://accounts.google.com",
		"IDP_PROXY_IDP_CLIENT_ID=app",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compile(c, CompileOptions{}); err != nil || c.IDP.IssuerURL != "https://accounts.google.com" {
		t.Fatalf("issuer_url from the environment: %q %v", c.IDP.IssuerURL, err)
	}
}

func TestIssuerFormsAreExclusive(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*IDP)
		want   string
	}{
		{"both forms", func(c *IDP) { c.IssuerURL = "https://sso.example.com" }, "idp.issuer_url excludes idp.server_url and idp.realm"},
		{"issuer_url and realm", func(c *IDP) { c.IssuerURL, c.ServerURL = "https://sso.example.com", "" }, "idp.issuer_url excludes"},
		{"neither form", func(c *IDP) { c.ServerURL, c.Realm = "", "" }, "idp.issuer_url, or idp.server_url and idp.realm (a Keycloak realm), is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.mutate(&c.IDP)
			_, err := Compile(c, CompileOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			var ke *KeyError
			if !errors.As(err, &ke) || ke.Key != "idp.issuer_url" || strings.Join(ke.Also, ",") != "idp.server_url,idp.realm" {
				t.Fatalf("no *KeyError naming idp.issuer_url, idp.server_url and idp.realm in %v", err)
			}
			// Reported once, not again in pkg/idp's words.
			if lines := strings.Split(err.Error(), "\n"); len(lines) != 1 {
				t.Errorf("%d problems reported, want 1:\n%v", len(lines), err)
			}
		})
	}
}

// The file names the Keycloak realm, the environment an issuer: the error
// blames the variable.
func TestIssuerFormsConflictBlamesEnvironment(t *testing.T) {
	c, err := Load(writeFile(t, "c.yaml", minimalYAML), LoadOptions{Env: []string{"IDP_PROXY_IDP_ISSUER_URL=https://sso.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(c, CompileOptions{})
	if err == nil || !strings.Contains(err.Error(), "idp.issuer_url comes from the environment variable IDP_PROXY_IDP_ISSUER_URL") {
		t.Fatalf("err = %v", err)
	}
}
