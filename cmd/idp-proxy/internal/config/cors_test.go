package config

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/proxy"
)

// TestCORSCheckPositions checks that check-config reports the problems
// of routes[].cors at their line and column, as the other problems of a
// rule, each as a *KeyError naming its key.
func TestCORSCheckPositions(t *testing.T) {
	path := writeFile(t, "cors.yaml", minimalYAML+`routes:
  - match: /api/
    cors:
      allowed_origins:
        - https://app.example.com
        - https://*.com
  - match: /cred/
    public: true
    cors:
      allowed_origins: ["*"]
      allow_credentials: true
  - match: PUT /items/{id}
    cors:
      allowed_origins: [https://app.example.com]
      allowed_methods: [DELETE]
`)
	f, err := Load(path, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(f, CompileOptions{})
	if err == nil {
		t.Fatal("Compile accepted the bad CORS policies")
	}
	for _, want := range []string{
		path + ":9:11: routes[0] \"/api/\": cors: allowed_origins \"https://*.com\"",
		path + ":13:25: routes[1] \"/cred/\": cors: allowed_origins \"*\" with allow_credentials",
		path + ":18:7: routes[2] \"PUT /items/{id}\": cors: allowed_methods: DELETE is never judged",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	var ke *KeyError
	if !errors.As(err, &ke) || !strings.HasPrefix(ke.Key, "routes[") {
		t.Errorf("not a *KeyError of a route: %v", err)
	}
}

// TestCORSMaxAge checks that max_age takes a duration or a number of
// seconds, as every duration of the file.
func TestCORSMaxAge(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
	}{{"600", 10 * time.Minute}, {"10m", 10 * time.Minute}, {`"90s"`, 90 * time.Second}} {
		path := writeFile(t, "cors.yaml", minimalYAML+`routes:
  - match: /api/
    cors:
      allowed_origins: [https://app.example.com]
      max_age: `+c.in+"\n")
		f, err := Load(path, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Routes[0].CORS.MaxAge; got != c.want {
			t.Errorf("max_age: %s is %s, want %s", c.in, got, c.want)
		}
		if _, err := Compile(f, CompileOptions{}); err != nil {
			t.Errorf("max_age: %s: %v", c.in, err)
		}
	}
}

// TestReadmeCORSSnippet loads and compiles the configuration of the
// README's "CORS" section and serves it: its preflights need neither a
// token nor the provider (which is not running here), and its refusals
// carry the CORS headers.
func TestReadmeCORSSnippet(t *testing.T) {
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## CORS\n")
	if !ok {
		t.Fatal(`README.md has no "## CORS" section`)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	blocks := yamlBlock.FindAllStringSubmatch(section, -1)
	if len(blocks) != 1 {
		t.Fatalf("the section has %d YAML blocks, want 1", len(blocks))
	}
	f, err := Load(writeFile(t, "cors.yaml", blocks[0][1]), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing listens on the snippet's addresses: keys never load, and the
	// upstream is down.
	f.IDP.ServerURL = "http://127.0.0.1:1"
	f.Upstream.URL = "http://127.0.0.1:1"
	c, err := Compile(f, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plugin, err := idp.New(t.Context(), c.IDP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plugin.Close() })
	p, err := proxy.NewCompiled(plugin, c.Proxy, proxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	serve := func(method, path string, hdr map[string]string) *http.Response {
		r := httptest.NewRequest(method, path, nil)
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		p.ServeHTTP(w, r)
		return w.Result()
	}
	for _, c := range []struct {
		origin string
		status int
		acao   string
	}{
		{"https://app.example.com", http.StatusNoContent, "https://app.example.com"},
		{"https://pr-12.preview.example.com", http.StatusNoContent, "https://pr-12.preview.example.com"},
		{"https://preview.example.com", http.StatusForbidden, ""},
		{"https://evil.example.net", http.StatusForbidden, ""},
	} {
		resp := serve(http.MethodOptions, "/api/links", map[string]string{"Origin": c.origin,
			"Access-Control-Request-Method": "DELETE", "Access-Control-Request-Headers": "authorization"})
		if resp.StatusCode != c.status || resp.Header.Get("Access-Control-Allow-Origin") != c.acao {
			t.Errorf("preflight from %s: %d, ACAO %q; want %d, %q", c.origin, resp.StatusCode,
				resp.Header.Get("Access-Control-Allow-Origin"), c.status, c.acao)
		}
	}
	// The provider is down: the proxy's 503 is readable by the app.
	resp := serve(http.MethodGet, "/api/links", map[string]string{"Origin": "https://app.example.com", "Authorization": "Bearer x.y.z"})
	if resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" || resp.StatusCode < 400 {
		t.Errorf("refusal: %d, ACAO %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	// The upstream is down: the proxy's 502 on the public route, any origin.
	resp = serve(http.MethodGet, "/catalog/1", map[string]string{"Origin": "https://anyone.test"})
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("upstream down: %d, ACAO %q; want 502, *", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
}
