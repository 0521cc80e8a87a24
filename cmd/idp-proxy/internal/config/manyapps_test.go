package config

import (
	"strings"
	"testing"
	"time"
)

// TestLoadManyApps: upstreams with their own transport and header
// settings, the redirect allowlist and the session cookie domain load
// from YAML and pass check-config.
func TestLoadManyApps(t *testing.T) {
	c, err := Load(writeFile(t, "c.yaml", `
upstream: {timeout: 20s}
upstreams:
  - match: grafana.example.com/
    url: http://127.0.0.1:3000
    headers: {forward_token: false, user: X-WEBAUTH-USER}
  - match: wiki.example.com/
    url: http://127.0.0.1:3001
    timeout: 5s
idp:
  server_url: http://127.0.0.1:8080
  realm: demo
  client_id: shortener
  include_routes: true
  redirect_uri: https://login.example.com/auth/callback
  session_secret: "0123456789abcdef0123456789abcdef"
  allowed_redirect_hosts: ["*.example.com"]
session: {enabled: true, cookie_domain: example.com}
`), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Upstreams) != 2 || c.Upstreams[0].URL != "http://127.0.0.1:3000" || c.Upstreams[1].Timeout != 5*time.Second ||
		c.Upstreams[0].Headers.ForwardToken == nil || *c.Upstreams[0].Headers.ForwardToken || *c.Upstreams[0].Headers.User != "X-WEBAUTH-USER" ||
		c.Upstreams[1].Headers.User != nil {
		t.Fatalf("upstreams: %+v", c.Upstreams)
	}
	if _, err := c.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	comp, err := Compile(c, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if comp.IDP.Session.CookieDomain != "example.com" || len(comp.IDP.AllowedRedirectHosts) != 1 {
		t.Errorf("idp config: cookie domain %q, allowed hosts %v", comp.IDP.Session.CookieDomain, comp.IDP.AllowedRedirectHosts)
	}
	c.Upstream.URL = "http://127.0.0.1:8000"
	if _, err := c.Check(); err == nil || !strings.Contains(err.Error(), "exclusive") {
		t.Errorf("upstream.url with upstreams: %v", err)
	}
}
