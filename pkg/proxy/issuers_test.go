package proxy

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// Two trusted issuers: the company's Keycloak realm (the primary,
// "default") and a CI provider ("ci"); /deploy/ takes only CI tokens,
// /app/ only the company's. The access log and the metrics name the
// issuer.
func TestIssuersPerRule(t *testing.T) {
	company := newProvider(t)
	ci := idptest.NewServer(t, idptest.Options{PlainIssuer: true})
	up := newUpstream(t)
	cfg := testConfig(company, up.URL)
	cfg.IDP.Issuers = []idp.TrustedIssuer{{
		Name: "ci", IssuerURL: ci.Issuer, Audiences: []string{"https://github.com/example"},
		Claims: idp.ClaimMapping{Preset: idp.PresetGeneric},
	}}
	cfg.Routes = []RouteConfig{
		{Match: "/deploy/", Issuers: []string{"ci"}, Roles: []string{"deployer"}},
		{Match: "/app/", Issuers: []string{"default"}},
		{Match: "/any/"},
	}
	var logBuf syncBuffer
	p, px := startProxy(t, cfg, Options{AccessLog: slog.New(slog.NewJSONHandler(&logBuf, nil))}, true)

	ciClaims := ci.GenericClaims("https://github.com/example", "deploy-bot", "deployer")
	ciTok := ci.Mint(ciClaims)
	companyTok := company.Mint(company.UserClaims("shortener", "alice", "deployer"))
	for _, c := range []struct {
		path, token string
		want        int
	}{
		{"/deploy/x", ciTok, http.StatusOK},
		{"/deploy/x", companyTok, http.StatusForbidden},
		{"/app/x", companyTok, http.StatusOK},
		{"/app/x", ciTok, http.StatusForbidden},
		{"/any/x", ciTok, http.StatusOK},
		{"/any/x", companyTok, http.StatusOK},
	} {
		if resp, body := do(t, "GET", px.URL+c.path, c.token, nil, ""); resp.StatusCode != c.want {
			t.Errorf("%s with a token of %s: %d %s, want %d", c.path, map[bool]string{true: "ci", false: "default"}[c.token == ciTok], resp.StatusCode, body, c.want)
		}
	}
	if _, body := do(t, "GET", px.URL+"/deploy/x", companyTok, nil, ""); !strings.Contains(body, `"clause":"issuers"`) ||
		!strings.Contains(body, `"detail":"the token's issuer is not one this rule accepts"`) {
		t.Errorf("403 body does not name the issuers clause in its clause and detail: %s", body)
	}
	if got := up.count(); got != 4 {
		t.Errorf("upstream reached %d times, want 4", got)
	}
	if h := up.last(t).Header.Get("X-Auth-Request-User"); h != "user-alice" {
		t.Errorf("last upstream user %q", h)
	}

	ops := httptest.NewServer(p.OpsHandler())
	t.Cleanup(ops.Close)
	_, metrics := do(t, "GET", ops.URL+"/metrics", "", nil, "")
	for _, want := range []string{
		`idp_proxy_issuer_requests_total{decision="allowed",issuer="ci"} 2`,
		`idp_proxy_issuer_requests_total{decision="forbidden",issuer="ci"} 1`,
		`idp_proxy_issuer_requests_total{decision="allowed",issuer="default"} 2`,
		`idp_proxy_issuer_requests_total{decision="forbidden",issuer="default"} 2`,
		`idp_proxy_issuer_jwks_ready{issuer="ci"} 1`,
		`idp_proxy_issuer_jwks_ready{issuer="default"} 1`,
		`idp_proxy_unknown_issuer_tokens_total 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	lines := strings.Split(strings.TrimSpace(logBuf.String()), "\n")
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["issuer"] != "ci" || rec["decision"] != "allowed" {
		t.Errorf("access log: %v, want issuer ci", rec)
	}
	if !strings.Contains(p.Table(), "issuers(any: ci)") {
		t.Errorf("rule table lacks the issuers clause:\n%s", p.Table())
	}
}

func TestIssuersRuleErrors(t *testing.T) {
	ic := idp.Config{ServerURL: "https://sso.example.com", Realm: "demo", ClientID: "c",
		Issuers: []idp.TrustedIssuer{{Name: "github-actions", IssuerURL: "https://token.actions.githubusercontent.com", Audiences: []string{"a"}}}}
	for _, c := range []struct {
		route RouteConfig
		want  []string
	}{
		{RouteConfig{Match: "/deploy/", Issuers: []string{"github"}}, []string{`Routes[0] "/deploy/": Issuers: unknown issuer "github" (did you mean "github-actions"?)`, "default, github-actions"}},
		{RouteConfig{Match: "/deploy/", Issuers: []string{"default", "default"}}, []string{`"default" is listed twice`}},
		{RouteConfig{Match: "/deploy/", Public: true, Issuers: []string{"default"}}, []string{"Public excludes Issuers"}},
	} {
		cfg := DefaultConfig()
		cfg.Upstream.URL = "http://127.0.0.1:1"
		cfg.Routes = []RouteConfig{c.route}
		_, err := Compile(cfg, ic)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %v, want %s", c.route, err, w)
			}
		}
		var ke *FieldError
		if err != nil && (!errors.As(err, &ke) || ke.Field != "Routes[0].Issuers") {
			t.Errorf("%+v: not a FieldError of Routes[0].Issuers: %#v", c.route, err)
		}
	}
	cfg := DefaultConfig()
	cfg.Upstream.URL = "http://127.0.0.1:1"
	cfg.Routes = []RouteConfig{{Match: "/deploy/", Issuers: []string{"github-actions", "default"}}}
	if _, err := Compile(cfg, ic); err != nil {
		t.Errorf("known issuers: %v", err)
	}
}

// Rules compiled against one set of issuer names do not serve a plugin
// with another: a rule could name an issuer the plugin does not trust.
func TestIssuersCompiledAgainstThePlugin(t *testing.T) {
	ic := idp.Config{ServerURL: "http://127.0.0.1:1", Realm: "demo", ClientID: "c",
		Issuers: []idp.TrustedIssuer{{Name: "ci", IssuerURL: "http://127.0.0.1:2", Audiences: []string{"a"}}}}
	cfg := DefaultConfig()
	cfg.Upstream.URL = "http://127.0.0.1:3"
	cfg.Routes = []RouteConfig{{Match: "/deploy/", Issuers: []string{"ci"}}}
	c, err := Compile(cfg, ic)
	if err != nil {
		t.Fatal(err)
	}
	other := ic
	other.Issuers = nil
	plugin, err := idp.New(t.Context(), other)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plugin.Close() })
	if _, err := NewCompiled(plugin, c, Options{}); err == nil || !strings.Contains(err.Error(), "issuer names differ") {
		t.Fatalf("NewCompiled with a plugin without ci: %v", err)
	}
}
