package proxy

import (
	"html"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/problem"
)

// browserNav are the headers of a browser following a link.
var browserNav = map[string]string{"Accept": "text/html,application/xhtml+xml,*/*;q=0.8", "Sec-Fetch-Mode": "navigate"}

// Every refusal of the proxy (rules, policy, path checks, unknown host,
// upstream failures) is an HTML page for a browser navigation and stays
// problem+json for a program, with the same status and WWW-Authenticate.
func TestRefusalPages(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	_ = ln.Close()
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // held until the proxy's upstream timeout gives up
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) })

	cfg := testConfig(idpSrv, up.URL)
	cfg.DefaultPolicy = PolicyDeny
	_, px := startProxy(t, cfg, Options{}, true)
	hosts, _, _, _ := manyAppsSetup(t)
	hosts.IDP = cfg.IDP
	_, pxHosts := startProxy(t, hosts, Options{}, true)
	deadCfg := testConfig(idpSrv, dead)
	_, pxDead := startProxy(t, deadCfg, Options{}, true)
	slowCfg := testConfig(idpSrv, slow.URL)
	slowCfg.Upstream.Timeout = 50 * time.Millisecond
	_, pxSlow := startProxy(t, slowCfg, Options{}, true)

	alice := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	for _, c := range []struct {
		name, base, host, target, token string
		status                          int
		detail                          string
		page                            []string
	}{
		{"no token", px.URL, "", "/admin/x", "", 401, "a bearer token is required", []string{"Sign-in required"}},
		{"role lacking", px.URL, "", "/admin/x", alice, 403, "lacks a required role", []string{"Access denied", "Signed in as <strong>alice</strong>"}},
		{"denied by policy", px.URL, "", "/else/where", alice, 403, "denied by the proxy's policy", []string{"Access denied"}},
		{"ambiguous path", px.URL, "", "/static/a//b", "", 400, "", []string{"Bad request"}},
		{"unknown host", pxHosts.URL, "unknown.test", "/health", "", 421, "no upstream serves this host", []string{"Unknown site"}},
		{"upstream down", pxDead.URL, "", "/health", "", 502, "the upstream service is unavailable", []string{"Service unavailable", `href="/health">Try again`}},
		{"upstream slow", pxSlow.URL, "", "/health", "", 504, "did not answer in time", []string{"did not answer in time", "Try again"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			get := func(hdr map[string]string) (*http.Response, string) {
				h := map[string]string{}
				for k, v := range hdr {
					h[k] = v
				}
				if c.host != "" {
					return hostGet(t, c.base, c.host, c.target, c.token, h)
				}
				return do(t, "GET", c.base+c.target, c.token, h, "")
			}
			api, apiBody := get(map[string]string{"Accept": "application/json"})
			if api.StatusCode != c.status || api.Header.Get("Content-Type") != problem.ContentType || !strings.Contains(apiBody, c.detail) {
				t.Fatalf("API: %d %q %s, want %d problem+json", api.StatusCode, api.Header.Get("Content-Type"), apiBody, c.status)
			}
			nav, body := get(browserNav)
			if nav.StatusCode != c.status || nav.Header.Get("Content-Type") != "text/html; charset=utf-8" {
				t.Fatalf("navigation: %d %q, want %d text/html: %s", nav.StatusCode, nav.Header.Get("Content-Type"), c.status, body)
			}
			if nav.Header.Get("WWW-Authenticate") != api.Header.Get("WWW-Authenticate") {
				t.Errorf("WWW-Authenticate: page %q, problem %q", nav.Header.Get("WWW-Authenticate"), api.Header.Get("WWW-Authenticate"))
			}
			for _, want := range append(c.page, html.EscapeString(c.detail), "request "+nav.Header.Get("X-Request-Id")) {
				if !strings.Contains(body, want) {
					t.Errorf("page lacks %q:\n%s", want, body)
				}
			}
			if c.token != "" && strings.Contains(body, c.token) {
				t.Error("the page shows the token")
			}
		})
	}
}
