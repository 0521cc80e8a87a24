package config

import (
	"encoding/json"
	"strings"
	"testing"
)

// Claims rules, e-mail domains and claim headers load as written (claim
// paths and header names keep their case, numbers their exact value).
func TestClaimRulesLoad(t *testing.T) {
	c, err := Load(writeFile(t, "c.yaml", claimsYAML+`routes:
  - match: /t/
    claims:
      tid: ["T-1", t2]
      https://example.com/tier: [gold]
      big: [9007199254740993, 0.1]
      mfa: [true]
    email_domains: [Corp.Example.com]
    strategy: any
headers:
  claims:
    X-Auth-Request-Tenant: tid
    X-Tier: https://example.com/tier
    X.Dotted: resource_access.app.roles
    X.Tenant: tid
`), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := Compile(c, CompileOptions{NoSecrets: true})
	if err != nil {
		t.Fatal(err)
	}
	r := c.Routes[0]
	if got := r.Claims["tid"]; len(got) != 2 || got[0] != "T-1" || got[1] != "t2" {
		t.Errorf("tid: %#v", got)
	}
	if got := r.Claims["big"]; len(got) != 2 || got[0] != json.Number("9007199254740993") || got[1] != json.Number("0.1") {
		t.Errorf("big: %#v, want the numbers as written", got)
	}
	if got := r.Claims["mfa"]; len(got) != 1 || got[0] != true {
		t.Errorf("mfa: %#v", got)
	}
	if len(c.Headers.Claims) != 4 || c.Headers.Claims["X-Auth-Request-Tenant"] != "tid" || c.Headers.Claims["X-Tier"] != "https://example.com/tier" ||
		c.Headers.Claims["X.Dotted"] != "resource_access.app.roles" {
		t.Errorf("headers.claims: %v", c.Headers.Claims)
	}
	table := cc.Proxy.Table()
	for _, want := range []string{`big in [9007199254740993, 0.1]`, `tid in ["T-1", "t2"]`, "email_domains(corp.example.com)", "claims(any:"} {
		if !strings.Contains(table, want) {
			t.Errorf("rule table lacks %s:\n%s", want, table)
		}
	}
}

// Every mistake in claims rules and claim headers is reported with its
// line and column, and a hint.
func TestClaimRulesErrorsHaveLines(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		at   string // file:line:col suffix
		says string
	}{
		{"routes:\n  - match: /t/\n    claims:\n      a..b: [x]\n", ":10:7:", `claim path "a..b": empty name`},
		{"routes:\n  - match: /t/\n    claims:\n      tid: t1\n", ":10:12:", `routes[0].claims.tid must be a list of accepted values, e.g. ["t1"]`},
		{"routes:\n  - match: /t/\n    claims:\n      tid: []\n", ":10:12:", "no accepted values"},
		{"routes:\n  - match: /t/\n    claims:\n      tid: [x, null]\n", ":10:16:", "null is not a value"},
		{"routes:\n  - match: /t/\n    claims:\n      tid: [[a]]\n", ":10:13:", "not a list or a mapping"},
		{"routes:\n  - match: /t/\n    claims:\n      tid: [0x1F]\n", ":10:13:", "write it as JSON does"},
		{"routes:\n  - match: /t/\n    claims:\n      tid: [.inf]\n", ":10:13:", "write it as JSON does"},
		{"routes:\n  - match: /t/\n    claims:\n      tid: ['']\n", ":10:13:", "empty string"},
		{"routes:\n  - match: /t/\n    claims: [tid]\n", ":9:13:", "must map claim paths"},
		{"routes:\n  - match: /t/\n    email_domains: [corp.example.com, '*.example.com']\n", ":9:39:", "no wildcards or suffixes"},
		{"routes:\n  - match: /t/\n    email_domains: ['@example.com']\n", ":9:21:", "without '@'"},
		{"headers:\n  claims:\n    Transfer-Encoding: tid\n", ":9:5:", "hop-by-hop"},
		{"headers:\n  claims:\n    X Tenant: tid\n", ":9:5:", "not a valid header name"},
		{"headers:\n  claims:\n    X-Tenant: 'a b'\n", ":9:15:", `names with '.' are written`},
		// A name that contains "header" does not move a path's problem
		// onto the name.
		{"headers:\n  claims:\n    x-header-tenant: 'a b'\n", ":9:22:", `names with '.' are written`},
		{"headers:\n  claims:\n    x-header-tenant: ''\n", ":9:22:", `names no claim`},
		{"headers:\n  claims:\n    X-Tenant: [tid]\n", ":9:15:", "must be one claim path"},
		{"headers:\n  claims: tid\n", ":8:11:", "must map header names to claim paths"},
	} {
		path := writeFile(t, "c.yaml", claimsYAML+tc.yaml)
		_, err := Load(path, LoadOptions{})
		if err == nil {
			t.Errorf("%q: loaded", tc.yaml)
			continue
		}
		if !strings.Contains(err.Error(), path+tc.at) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%q:\n%v\nwant %s at %s", tc.yaml, err, tc.says, tc.at)
		}
	}
	// A claim header that is an identity header is refused at Compile.
	c, err := Load(writeFile(t, "c.yaml", claimsYAML+"headers:\n  claims:\n    x-auth-request-user: tid\n"), LoadOptions{})
	if err == nil {
		_, err = c.Check()
	}
	if err == nil || !strings.Contains(err.Error(), "same header as headers.user") {
		t.Errorf("claim header named as headers.user: %v", err)
	}
	// headers.claims is a mapping: not from the environment.
	_, err = Load("", LoadOptions{Env: []string{"IDP_PROXY_HEADERS_CLAIMS=X-T=tid"}})
	if err == nil || !strings.Contains(err.Error(), "cannot be set from the environment") {
		t.Errorf("IDP_PROXY_HEADERS_CLAIMS: %v", err)
	}
}
