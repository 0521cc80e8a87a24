package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

const issuersYAML = minimalYAML + `routes:
  - match: /deploy/
    issuers: [github-actions]
  - match: /app/
    issuers: [default]
`

func TestIssuersLoad(t *testing.T) {
	y := strings.Replace(issuersYAML, "client_id: shortener}\n", `client_id: shortener,
  issuer_name: company,
  issuers: [{name: github-actions, issuer_url: "https://token.actions.githubusercontent.com",
             audiences: ["https://github.com/example-org"], claims: {preset: generic},
             algorithms: [RS256], jwks_cache_ttl: 10m, unknown_kid_refresh_interval: 5s},
            {name: partner, server_url: "https://sso.partner.example", realm: main, audiences: [shortener]}]}
`, 1)
	y = strings.Replace(y, "issuers: [default]", "issuers: [company, partner]", 1)
	f, err := Load(writeFile(t, "c.yaml", y), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(f, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.IDP.IssuerName != "company" || len(c.IDP.Issuers) != 2 {
		t.Fatalf("IssuerName %q, Issuers %+v", c.IDP.IssuerName, c.IDP.Issuers)
	}
	gh := c.IDP.Issuers[0]
	if gh.Name != "github-actions" || gh.Claims.Preset != idp.PresetGeneric || gh.JWKSCacheTTL.Minutes() != 10 ||
		gh.UnknownKIDRefreshInterval.Seconds() != 5 || gh.Audiences[0] != "https://github.com/example-org" {
		t.Errorf("issuers[0] = %+v", gh)
	}
	if p := c.IDP.Issuers[1]; p.Issuer() != "https://sso.partner.example/realms/main" {
		t.Errorf("issuers[1] issuer %q", p.Issuer())
	}
	table := c.Proxy.Table()
	for _, w := range []string{"issuers(any: github-actions)", "issuers(any: company, partner)"} {
		if !strings.Contains(table, w) {
			t.Errorf("rule table lacks %s:\n%s", w, table)
		}
	}
	f, err = Load(writeFile(t, "c.yaml", y), LoadOptions{Env: []string{"IDP_PROXY_IDP_ISSUER_NAME=corp"}})
	if err == nil {
		_, err = Compile(f, CompileOptions{})
	}
	if err == nil || !strings.Contains(err.Error(), `unknown issuer "company"`) || !strings.Contains(err.Error(), "the trusted issuers are corp,") {
		t.Errorf("idp.issuer_name from the environment: %v", err)
	}
	if _, err := Load(writeFile(t, "c.yaml", y), LoadOptions{Env: []string{"IDP_PROXY_IDP_ISSUERS=x"}}); err == nil ||
		!strings.Contains(err.Error(), "unknown variable IDP_PROXY_IDP_ISSUERS") {
		t.Errorf("idp.issuers from the environment: %v", err)
	}
}

// check-config points at the line of an issuer's mistake, with a hint.
func TestIssuersErrorsPointAtLines(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"unknown issuer in a rule", issuersYAML, []string{
			"c.yaml:6:5:", `routes[0] "/deploy/": issuers: unknown issuer "github-actions"`, "the trusted issuers are default"}},
		{"typo of an issuer's name", strings.Replace(issuersYAML, "client_id: shortener}", `client_id: shortener,
  issuers: [{name: github-actions, issuer_url: "https://token.actions.githubusercontent.com", audiences: [a]}]}`, 1) + "  - match: /ci/\n    issuers: [github]\n", []string{
			"c.yaml:11:5:", `unknown issuer "github" (did you mean "github-actions"?)`}},
		{"no audiences", minimalYAML[:len(minimalYAML)-2] + `,
  issuers: [{name: ci, issuer_url: "https://ci.example"}]}
`, []string{"c.yaml:4:13:", "issuers[0] (ci): audiences is required"}},
		{"duplicate name", strings.Replace(minimalYAML, "client_id: shortener}", `client_id: shortener}
idp_issuers_placeholder`, 1), nil},
		{"unknown key in an issuer", minimalYAML + "", nil},
		{"bad issuer_name", strings.Replace(minimalYAML, "client_id: shortener}", "client_id: shortener,\n  issuer_name: the company}", 1),
			[]string{"c.yaml:4:3:", `issuer_name "the company"`}},
	}
	// Rewrite the two placeholder cases as block YAML.
	tests[3].yaml = `upstream: {url: "http://127.0.0.1:8000"}
idp:
  server_url: "http://127.0.0.1:8080"
  realm: demo
  client_id: shortener
  issuers:
    - name: ci
      issuer_url: https://ci.example
      audiences: [a]
    - name: ci
      issuer_url: https://ci2.example
      audiences: [a]
`
	tests[3].want = []string{"c.yaml:10:7:", `issuers[1] (ci): name "ci" is already the name of issuers[0]`}
	tests[4].yaml = strings.Replace(tests[3].yaml, "    - name: ci\n      issuer_url: https://ci2.example", "    - name: ci2\n      issuer_ulr: https://ci2.example", 1)
	tests[4].want = []string{"c.yaml:11:7", `unknown key "idp.issuers[1].issuer_ulr"`, `did you mean "idp.issuers[1].issuer_url"`}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Load(writeFile(t, "c.yaml", tt.yaml), LoadOptions{})
			if err == nil {
				_, err = Compile(f, CompileOptions{})
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			var ke *KeyError
			if strings.HasPrefix(tt.name, "unknown key") {
				return
			}
			if !errors.As(err, &ke) || !strings.Contains(ke.Key, "issuer") {
				t.Errorf("no KeyError of an issuers key: %#v", err)
			}
		})
	}
}
