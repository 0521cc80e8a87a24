package cli

import (
	"net/http"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// The in-process mode takes any OpenID Connect issuer, not only a
// Keycloak realm: --idp-issuer-url (found by discovery) and
// --idp-claims-preset generic, whose roles claim --idp-create-roles
// reads. The issuer URL excludes the realm options, and the preset is
// checked.
func TestInProcessIDPIssuerURL(t *testing.T) {
	srv := idptest.NewServer(t, idptest.Options{PlainIssuer: true})
	cfg, err := capture(t, "--store", "memory:", "--idp-issuer-url", srv.Issuer, "--idp-client-id", "shortener",
		"--idp-claims-preset", "generic", "--idp-create-roles", "creator")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen, cfg.MetricsListen = "127.0.0.1:0", "off"
	base, stop, logs := startRun(t, cfg)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("run: %v\n%s", err, logs)
		}
	}()
	shorten := func(token string) int {
		req, _ := http.NewRequest("POST", base+"/shorten", strings.NewReader(`{"url":"https://example.com/a"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := shorten(srv.Mint(srv.GenericClaims("shortener", "alice", "creator"))); got != http.StatusCreated {
		t.Errorf("alice, roles [creator] of a plain issuer: %d, want 201\n%s", got, logs)
	}
	if got := shorten(srv.Mint(srv.GenericClaims("shortener", "bob"))); got != http.StatusForbidden {
		t.Errorf("bob, no role: %d, want 403", got)
	}

	for _, args := range [][]string{
		{"--idp-issuer-url", srv.Issuer, "--idp-realm", "demo", "--idp-client-id", "shortener"},
		{"--idp-issuer-url", srv.Issuer, "--idp-server-url", srv.URL, "--idp-client-id", "shortener"},
		{"--idp-issuer-url", srv.Issuer, "--idp-client-id", "shortener", "--idp-claims-preset", "okta"},
		{"--idp-claims-preset", "generic"}, // needs an issuer
	} {
		if _, err := capture(t, args...); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
