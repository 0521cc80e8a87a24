package interop_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// corsUpstream is the API behind the proxy: it answers JSON describing
// the request, with a CORS header of its own that the route's policy
// replaces, and records the methods it got.
type corsUpstream struct {
	mu   sync.Mutex
	seen []string // "METHOD /path cookie=<bool>"
}

func (u *corsUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, err := r.Cookie("theme")
	line := fmt.Sprintf("%s %s cookie=%v", r.Method, r.URL.Path, err == nil)
	u.mu.Lock()
	u.seen = append(u.seen, line)
	u.mu.Unlock()
	w.Header().Set("Access-Control-Allow-Origin", "*") // replaced by the route's policy
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"method": r.Method, "user": r.Header.Get("X-Auth-Request-User"), "cookie": err == nil})
}

func (u *corsUpstream) requests() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.seen...)
}

// corsCall is one fetch() of a page's script, as browser/cors.mjs makes it.
type corsCall struct {
	Name        string            `json:"name"`
	URL         string            `json:"url"`
	Method      string            `json:"method"`
	Headers     map[string]string `json:"headers,omitempty"`
	Credentials string            `json:"credentials,omitempty"`
	Body        string            `json:"body,omitempty"`
	Read        []string          `json:"read,omitempty"`
}

// corsOutcome is what the script got.
type corsOutcome struct {
	Name    string             `json:"name"`
	Status  int                `json:"status"`
	Headers map[string]*string `json:"headers"`
	Body    string             `json:"body"`
	Error   string             `json:"error"`
}

// TestBrowserCORS has Chromium call idp-proxy from pages of two other
// loopback origins: one a route's CORS policy allows, one it does not,
// with and without credentials, allowed and refused by the policy and by
// the rules. The browser's own CORS checks decide what the scripts read.
func TestBrowserCORS(t *testing.T) {
	t.Parallel()
	requireTools(t, needProvider|needBrowser)
	p := startProvider(t, providerOptions{})
	token := serviceToken(t, p)

	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!DOCTYPE html><html><head><title>cors page</title></head><body>cross-origin caller</body></html>`))
	})
	allowed := httptest.NewServer(page)
	t.Cleanup(allowed.Close)
	other := httptest.NewServer(page)
	t.Cleanup(other.Close)

	up := &corsUpstream{}
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)

	proxyAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	opsAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	proxy := "http://" + proxyAddr
	cfg := proxyYAMLHead(proxyAddr, opsAddr, upSrv.URL, realmYAML(p.ServerURL()), proxy,
		"  optional_audiences: ["+svcClientID+"]\n") + fmt.Sprintf(`routes:
  - match: /api/
    roles: [creator]
    cors:
      allowed_origins: [%q]
      allowed_methods: [GET, POST, PUT]
      allowed_headers: [Authorization, Content-Type]
      exposed_headers: [X-Request-Id]
      max_age: 0
  - match: /cred/
    public: true
    cors:
      allowed_origins: [%q]
      allow_credentials: true
default_policy: deny
log:
  format: json
  level: info
`, allowed.URL, allowed.URL)
	startProxyYAML(t, "idp-proxy-cors", cfg, opsAddr)

	bearer := map[string]string{"Authorization": "Bearer " + token}
	jsonBearer := map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"}
	calls := []corsCall{
		{Name: "get with token", URL: proxy + "/api/items", Method: "GET", Headers: bearer, Read: []string{"x-request-id"}},
		{Name: "get without token", URL: proxy + "/api/items", Method: "GET", Read: []string{"www-authenticate"}},
		{Name: "put json with token", URL: proxy + "/api/items/1", Method: "PUT", Headers: jsonBearer, Body: `{"x":1}`},
		{Name: "delete not allowed", URL: proxy + "/api/items/1", Method: "DELETE", Headers: bearer},
		{Name: "header not allowed", URL: proxy + "/api/items", Method: "GET", Headers: map[string]string{"Authorization": "Bearer " + token, "X-Custom": "1"}},
		{Name: "credentials allowed", URL: proxy + "/cred/x", Method: "GET", Credentials: "include"},
		{Name: "credentials not allowed", URL: proxy + "/api/items", Method: "GET", Headers: bearer, Credentials: "include"},
		{Name: "credentials omitted", URL: proxy + "/cred/x", Method: "GET", Credentials: "omit"},
	}
	var res struct {
		Pages []struct {
			URL   string        `json:"url"`
			Calls []corsOutcome `json:"calls"`
		} `json:"pages"`
		ConsoleErrors []string `json:"consoleErrors"`
	}
	runScript(t, "cors.mjs", map[string]any{
		"chromium":  chromiumPath(),
		"timeoutMs": 30000,
		// A cookie of the proxy's site, sent with credentials: "include".
		"cookies": []map[string]any{{"name": "theme", "value": "dark", "url": proxy}},
		"pages": []map[string]any{
			{"url": allowed.URL + "/", "calls": calls},
			{"url": other.URL + "/", "calls": calls},
		},
	}, 120*time.Second, &res)
	if len(res.Pages) != 2 {
		t.Fatalf("browser: %d pages", len(res.Pages))
	}
	type want struct {
		status int    // 0: fetch() must reject (a CORS refusal)
		body   string // a part of the body the script must read
		header string // the header of Read that must be readable
	}
	wants := map[string]want{
		"get with token":          {status: 200, body: `"user":"`, header: "x-request-id"},
		"get without token":       {status: 401, header: "www-authenticate"},
		"put json with token":     {status: 200, body: `"method":"PUT"`},
		"delete not allowed":      {},
		"header not allowed":      {},
		"credentials allowed":     {status: 200, body: `"cookie":true`},
		"credentials not allowed": {},
		"credentials omitted":     {status: 200, body: `"cookie":false`},
	}
	check := func(pageURL string, got []corsOutcome, allowedOrigin bool) {
		for _, o := range got {
			w := wants[o.Name]
			if !allowedOrigin {
				w = want{} // nothing is readable from an origin the policy does not name
			}
			switch {
			case w.status == 0 && o.Error == "":
				t.Errorf("%s: %q: the script read %d %q, want a CORS refusal", pageURL, o.Name, o.Status, o.Body)
			case w.status == 0 && !strings.Contains(o.Error, "TypeError"):
				t.Errorf("%s: %q: error %q, want fetch's TypeError", pageURL, o.Name, o.Error)
			case w.status != 0 && (o.Error != "" || o.Status != w.status || !strings.Contains(o.Body, w.body)):
				t.Errorf("%s: %q: %d %q (error %q), want a readable %d with %q", pageURL, o.Name, o.Status, o.Body, o.Error, w.status, w.body)
			case w.header != "" && (o.Headers[w.header] == nil || *o.Headers[w.header] == ""):
				t.Errorf("%s: %q: the script cannot read %s", pageURL, o.Name, w.header)
			}
		}
	}
	check(res.Pages[0].URL, res.Pages[0].Calls, true)
	check(res.Pages[1].URL, res.Pages[1].Calls, false)

	// The preflights were the proxy's: none reached the upstream, and the
	// refused DELETE and X-Custom requests were never sent.
	for _, r := range up.requests() {
		if strings.HasPrefix(r, "OPTIONS ") || strings.HasPrefix(r, "DELETE ") {
			t.Errorf("the upstream got %q", r)
		}
	}
	t.Logf("upstream requests: %q", up.requests())
}
