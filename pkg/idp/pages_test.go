package idp_test

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// corpTemplate is a deployment's own page.
const corpTemplate = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} - {{.Name}}</title><style>{{.CSS}}</style></head>
<body><div class="corp" data-status="{{.Status}}">
{{with .Logo}}<img src="{{.}}" alt="">{{end}}
<h1>{{.Title}}</h1><p class="corp-detail">{{.Detail}}</p>
{{with .User}}<p class="corp-user">{{.}}</p>{{end}}
{{with .SignIn}}<a class="corp-signin" href="{{.}}">Sign in</a>{{end}}
{{with .SignOut}}<form method="post" action="{{.}}"><button>Sign out</button></form>{{end}}
<small>{{.RequestID}}</small></div></body></html>
`

// inlineStyles finds a page's <style> elements.
var inlineStyles = regexp.MustCompile(`(?s)<style>(.*?)</style>`)

// wantCSPAllowsStyles checks that the page's policy allows exactly its
// <style> elements.
func wantCSPAllowsStyles(t *testing.T, hdr http.Header, body string) {
	t.Helper()
	var srcs []string
	for _, m := range inlineStyles.FindAllStringSubmatch(body, -1) {
		sum := sha256.Sum256([]byte(m[1]))
		srcs = append(srcs, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
	}
	want := "style-src " + strings.Join(srcs, " ") + ";"
	if csp := hdr.Get("Content-Security-Policy"); len(srcs) == 0 || !strings.Contains(csp, want) {
		t.Errorf("CSP %q does not allow exactly the page's styles (%s)", csp, want)
	}
}

// A deployment's pages answer the middleware's and guards' refusals to
// navigations (401, 403) and the sign-in's errors; programs keep getting
// the same problem+json as without them.
func TestCustomPages(t *testing.T) {
	pages, err := idp.NewPages(idp.PagesConfig{
		FS:     fstest.MapFS{"error.html": {Data: []byte(corpTemplate)}, "style.css": {Data: []byte(".corp h1 { color: var(--accent) }\n")}},
		Name:   "Example Corp",
		Colors: idp.PageColors{Accent: "#c2185b"},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := idptest.NewServer(t)
	routes := func(c *idp.Config) {
		c.ClientSecret = clientSecret
		c.IncludeRoutes = true
		c.RedirectURI = "http://app.example/auth/callback"
		c.SessionSecret = []byte(sessionSecret)
	}
	custom := newPlugin(t, srv, func(c *idp.Config) { routes(c); c.Pages = pages })
	builtin := newPlugin(t, srv, routes)
	guarded := func(p *idp.Plugin) http.Handler {
		return p.Middleware(p.Require(idp.RequireRoles(idp.MatchAll, "admin"))(&okHandler{}))
	}
	alice := srv.Mint(map[string]any{"azp": clientID, "preferred_username": "alice",
		"realm_access": map[string]any{"roles": []string{"creator"}}})
	for _, c := range []struct {
		name   string
		h      func(*idp.Plugin) http.Handler
		hdr    []string
		status int
		title  string
		page   []string
	}{
		{"401", guarded, nil, 401, "Sign-in required", []string{`data-status="401"`, `<p class="corp-detail">a bearer token is required</p>`,
			`<a class="corp-signin" href="/auth/login?return_to=%2Fadmin">Sign in</a>`}},
		{"403", guarded, []string{"Authorization", "Bearer " + alice}, 403, "Access denied", []string{`data-status="403"`,
			`<p class="corp-user">alice</p>`, "lacks a required role"}},
		{"detail escaped", func(p *idp.Plugin) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				p.WriteProblem(w, r, http.StatusBadRequest, `bad input: <script>alert("x")</script>`)
			})
		}, nil, 400, "Bad request", []string{`<p class="corp-detail">bad input: &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;</p>`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			nav := do(t, c.h(custom), "GET", "/admin", append(append([]string{}, navigation...), c.hdr...)...)
			body := nav.Body.String()
			if nav.Code != c.status || nav.Header().Get("Content-Type") != "text/html; charset=utf-8" {
				t.Fatalf("%d %q:\n%s", nav.Code, nav.Header().Get("Content-Type"), body)
			}
			for _, w := range append(c.page, "<h1>"+c.title+"</h1>", "<title>"+c.title+" - Example Corp</title>", "--accent: #c2185b;", ".corp h1 { color: var(--accent) }") {
				if !strings.Contains(body, w) {
					t.Errorf("the page lacks %q:\n%s", w, body)
				}
			}
			if strings.Contains(body, "<script") || strings.Contains(body, "Back to the home page") {
				t.Errorf("not the deployment's page, or unescaped:\n%s", body)
			}
			wantCSPAllowsStyles(t, nav.Header(), body)
			// Programs: the same answer as with the built-in pages.
			for _, accept := range []string{"application/json", "*/*"} {
				hdr := append([]string{"Accept", accept}, c.hdr...)
				got, want := do(t, c.h(custom), "GET", "/admin", hdr...), do(t, c.h(builtin), "GET", "/admin", hdr...)
				if got.Code != want.Code || got.Body.String() != want.Body.String() ||
					got.Header().Get("Content-Type") != want.Header().Get("Content-Type") || got.Header().Get("WWW-Authenticate") != want.Header().Get("WWW-Authenticate") {
					t.Errorf("Accept %s: %d %s, want %d %s", accept, got.Code, got.Body, want.Code, want.Body)
				}
			}
		})
	}
	t.Run("sign-in error", func(t *testing.T) {
		e := newFlowEnv(t, idptest.Options{}, func(c *idp.Config) { c.Pages = pages })
		req, _ := http.NewRequest("GET", withQuery(t, e.loginToCallback(t), map[string]string{"state": "forged"}), nil)
		for i := 0; i < len(navigation); i += 2 {
			req.Header.Set(navigation[i], navigation[i+1])
		}
		resp := e.do(t, req)
		body := readBody(resp)
		if resp.StatusCode != 400 || !strings.Contains(body, "<h1>Sign-in failed</h1>") || !strings.Contains(body, "state mismatch") ||
			!strings.Contains(body, `class="corp-signin" href="/auth/login?return_to=%2F"`) {
			t.Errorf("%d:\n%s", resp.StatusCode, body)
		}
		wantCSPAllowsStyles(t, resp.Header, body)
	})
}

// A deployment's pages are read from a directory; its mistakes are
// configuration errors naming the key, the file and the line.
func TestNewPagesErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "error.html"), []byte("<h1>{{.Title}}</h1>\n<p>{{.Detial}}</p>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := idp.NewPages(idp.PagesConfig{Dir: dir, Colors: idp.PageColors{Text: "black; }"}})
	var ce *idp.ConfigError
	if !errors.As(err, &ce) || !errors.Is(err, idp.ErrConfig) {
		t.Fatalf("%v: not a *ConfigError", err)
	}
	for _, want := range []string{
		"pages.dir: " + filepath.Join(dir, "error.html") + ":2:5: executing",
		"can't evaluate field Detial",
		`pages.colors.text: "black; }" is not a CSS colour`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nlacks %q", err, want)
		}
	}
	fields := map[string]bool{}
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		if errors.As(e, &ce) {
			fields[ce.Field] = true
		}
	}
	if !fields["Pages.Dir"] || !fields["Pages.Colors.Text"] {
		t.Errorf("fields %v", fields)
	}
	if _, err := idp.NewPages(idp.PagesConfig{Dir: filepath.Join(dir, "absent")}); err == nil || !strings.Contains(err.Error(), "no such file or directory") {
		t.Errorf("absent directory: %v", err)
	}
}
