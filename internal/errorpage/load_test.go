package errorpage

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"html/template"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// A tiny valid SVG and PNG.
const svgLogo = `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10" fill="#c2185b"/></svg>`

var pngLogo = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")

// customTemplate is a deployment's own page: its own markup, the
// stylesheet in a fixed <style>, the logo and every field.
const customTemplate = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} | {{.Name}}</title>
<style>
{{.CSS}}
</style>
<style>.corp-footer { font-size: small }</style>
</head><body class="corp">
{{with .Logo}}<img src="{{.}}" alt="Example Corp">{{end}}
<h1 class="corp-title">{{.Status}} {{.StatusText}}: {{.Title}}</h1>
<p>{{.Summary}}</p>
{{with .User}}<p class="corp-user">{{.}}</p>{{end}}
{{with .Detail}}<pre class="corp-detail">{{.}}</pre>{{end}}
{{with .SignIn}}<a class="corp-signin" href="{{.}}">Sign in</a>{{end}}
{{with .SignOut}}<form method="post" action="{{.}}"><button>Sign out</button></form>{{end}}
{{with .Retry}}<a href="{{.}}">Retry</a>{{end}}
{{with .Home}}<a href="{{.}}">Home</a>{{end}}
<footer class="corp-footer">ref {{.RequestID}}</footer>
</body></html>
`

// styleHashes returns the CSP sources of the page's <style> elements.
func styleHashes(t *testing.T, body string) []string {
	t.Helper()
	styles, err := checkPage([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var srcs []string
	for _, s := range styles {
		sum := sha256.Sum256([]byte(s))
		srcs = append(srcs, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
	}
	return srcs
}

// A deployment's template renders every refusal, its data escaped, its
// stylesheet (built-in, colours, style.css) and logo inline, and the
// Content-Security-Policy allows exactly its <style> elements.
func TestNewCustomTemplate(t *testing.T) {
	ps, err := New(Options{
		FS: fstest.MapFS{
			"error.html": {Data: []byte(customTemplate)},
			"style.css":  {Data: []byte(".corp-title { color: var(--accent) }\n")},
			"logo.svg":   {Data: []byte(svgLogo)},
			"README.md":  {Data: []byte("not a page file: ignored")},
		},
		Name:       "Example Corp",
		Colors:     Colors{Accent: "#c2185b", Background: "rgb(255 250 250)"},
		DarkColors: Colors{Accent: "oklch(0.8 0.1 350)"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		page Page
		want []string
	}{
		{Page{Status: 401, Detail: `no token <script>alert(1)</script>`, SignIn: "/auth/login?return_to=%2Fx"},
			[]string{"<title>Sign-in required | Example Corp</title>", `<h1 class="corp-title">401 Unauthorized: Sign-in required</h1>`,
				`<pre class="corp-detail">no token &lt;script&gt;alert(1)&lt;/script&gt;</pre>`, `href="/auth/login?return_to=%2Fx"`}},
		{Page{Status: 403, User: `<b>alice</b>`, SignOut: "/auth/logout", Home: "javascript:alert(1)"},
			[]string{"403 Forbidden: Access denied", `<p class="corp-user">&lt;b&gt;alice&lt;/b&gt;</p>`, `action="/auth/logout"`, `href="#ZgotmplZ"`}},
	} {
		rec := httptest.NewRecorder()
		rec.Header().Set("X-Request-Id", "req-7")
		if err := ps.Write(rec, c.page); err != nil {
			t.Fatal(err)
		}
		body := rec.Body.String()
		if rec.Code != c.page.Status || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("%d %q", rec.Code, rec.Header().Get("Content-Type"))
		}
		for _, w := range append(c.want, "ref req-7", `<img src="data:image/svg&#43;xml;base64,`,
			"--accent: #c2185b;", "--bg: rgb(255 250 250);", "@media (prefers-color-scheme: dark) { :root { --accent: oklch(0.8 0.1 350); } }",
			".corp-title { color: var(--accent) }", "--accent: #0b57d0") {
			if !strings.Contains(body, w) {
				t.Errorf("%d page lacks %q:\n%s", c.page.Status, w, body)
			}
		}
		if strings.Contains(body, "<script") || strings.Contains(body, "<b>") {
			t.Errorf("unescaped data:\n%s", body)
		}
		// The stylesheet comes after the colours, which come after the
		// built-in rules: the deployment's rules win.
		if i, j, k := strings.Index(body, "--accent: #0b57d0"), strings.Index(body, "--accent: #c2185b"), strings.Index(body, ".corp-title {"); !(i < j && j < k) {
			t.Errorf("stylesheet order %d %d %d", i, j, k)
		}
		want := "default-src 'none'; style-src " + strings.Join(styleHashes(t, body), " ") + "; img-src data:; base-uri 'none'; frame-ancestors 'none'"
		if csp := rec.Header().Get("Content-Security-Policy"); csp != want || len(styleHashes(t, body)) != 2 {
			t.Errorf("CSP\n %q\nwant\n %q", csp, want)
		}
	}
}

// Branding without a template: the built-in page with the logo, the name
// and the colours.
func TestNewBranding(t *testing.T) {
	ps, err := New(Options{Logo: pngLogo, Name: "Example Corp", Colors: Colors{Accent: "rebeccapurple"}})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	_ = ps.Write(rec, Page{Status: 403})
	body := rec.Body.String()
	for _, w := range []string{"<title>Access denied · Example Corp</title>", `<img class="logo" src="data:image/png;base64,iVBORw0KGgo`,
		`<span class="name">Example Corp</span>`, "--accent: rebeccapurple;", "You may not open this page."} {
		if !strings.Contains(body, w) {
			t.Errorf("page lacks %q:\n%s", w, body)
		}
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "style-src "+styleHashes(t, body)[0]+";") {
		t.Errorf("CSP %q does not allow the stylesheet", csp)
	}
	// Unbranded, the built-in page shows no header.
	rec = httptest.NewRecorder()
	Write(rec, Page{Status: 403})
	if strings.Contains(rec.Body.String(), `class="brand"`) || !strings.Contains(rec.Body.String(), "<title>Access denied</title>") {
		t.Errorf("built-in page branded:\n%s", rec.Body)
	}
}

// Every mistake in a deployment's pages is an error when they are loaded,
// naming the option, the file and the line: never a 500, a page without
// its style or a broken image at request time.
func TestNewRefuses(t *testing.T) {
	big := make([]byte, MaxLogoBytes+1)
	copy(big, pngLogo)
	for _, c := range []struct {
		name   string
		files  fstest.MapFS
		o      Options
		option string
		want   string
	}{
		{"parse error", fstest.MapFS{"error.html": {Data: []byte("<p>\n{{.Title</p>")}}, Options{}, "dir", "/etc/pages/error.html:2: "},
		{"unknown field", fstest.MapFS{"error.html": {Data: []byte("<p>\n<b>{{.Nope}}</b>")}}, Options{}, "dir", `/etc/pages/error.html:2:5: executing "/etc/pages/error.html" at <.Nope>: can't evaluate field Nope`},
		{"unknown function", fstest.MapFS{"error.html": {Data: []byte("{{upper .Title}}")}}, Options{}, "dir", `/etc/pages/error.html:1: function "upper" not defined`},
		{"fails on one status", fstest.MapFS{"error.html": {Data: []byte(`{{if eq .Status 429}}{{index .Title 99}}{{end}}`)}}, Options{}, "dir", "error.html:1:"},
		{"style attribute", fstest.MapFS{"error.html": {Data: []byte(`<p style="color:red">{{.Title}}</p>`)}}, Options{}, "dir", `<p style="color:red">: the page's Content-Security-Policy blocks style attributes`},
		{"script", fstest.MapFS{"error.html": {Data: []byte(`<script>var x = 1</script>`)}}, Options{}, "dir", "<script>: the page runs no script"},
		{"event handler", fstest.MapFS{"error.html": {Data: []byte(`<body onload="x()">`)}}, Options{}, "dir", "<body onload>"},
		{"remote image", fstest.MapFS{"error.html": {Data: []byte(`<img src="https://cdn.example.com/logo.png">`)}}, Options{}, "dir", `<img src="https://cdn.example.com/logo.png">: the page loads nothing from elsewhere`},
		{"remote stylesheet", fstest.MapFS{"error.html": {Data: []byte(`<link rel="stylesheet" href="/app.css">`)}}, Options{}, "dir", `<link rel="stylesheet">`},
		{"style from the data", fstest.MapFS{"error.html": {Data: []byte(`<style>{{.Detail}}</style>`)}}, Options{}, "dir", "a <style> element holds the page's data"},
		{"stylesheet url", fstest.MapFS{"style.css": {Data: []byte("h1 { color: red }\nbody { background: url(https://cdn.example.com/bg.png) }")}}, Options{}, "dir", "/etc/pages/style.css:2: url(https://cdn.example.com/bg.png)"},
		{"stylesheet import", fstest.MapFS{"style.css": {Data: []byte(`@import "x.css";`)}}, Options{}, "dir", "/etc/pages/style.css:1: @import"},
		{"stylesheet ends the element", fstest.MapFS{"style.css": {Data: []byte("h1 {}\n</style><script>x()</script>")}}, Options{}, "dir", `/etc/pages/style.css:2: "</style" would end`},
		{"misspelt file", fstest.MapFS{"eror.html": {Data: []byte("x")}}, Options{}, "dir", "/etc/pages/eror.html: not a file of the pages (error.html, style.css, logo.{gif,jpeg,jpg,png,svg,webp})"},
		{"nothing", fstest.MapFS{"README.md": {Data: []byte("x")}}, Options{}, "dir", "/etc/pages holds none of error.html, style.css, logo."},
		{"two logos", fstest.MapFS{"logo.png": {Data: pngLogo}, "logo.svg": {Data: []byte(svgLogo)}}, Options{}, "dir", "two logos, logo.png and logo.svg"},
		{"logo of another type", fstest.MapFS{"logo.png": {Data: []byte(svgLogo)}}, Options{}, "dir", "/etc/pages/logo.png: the file name says image/png, the content is image/svg+xml"},
		{"logo in both", fstest.MapFS{"logo.png": {Data: pngLogo}}, Options{Logo: pngLogo}, "logo", "logo.png in the directory and a logo"},
		{"template in both", fstest.MapFS{"error.html": {Data: []byte("x")}}, Options{Template: template.Must(template.New("x").Parse("y"))}, "template", "error.html in the directory and a template"},
		{"not an image", nil, Options{Logo: []byte("BM\x00\x00 a bitmap")}, "logo", "not a PNG, JPEG, GIF, WebP or SVG image"},
		{"logo too large", nil, Options{Logo: big}, "logo", "more than the 65536"},
		{"colour injection", nil, Options{Colors: Colors{Accent: "red; } body { display: none"}}, "colors.accent", `"red; } body { display: none" is not a CSS colour`},
		{"dark colour", nil, Options{DarkColors: Colors{Panel: "url(x)"}}, "dark_colors.panel", "is not a CSS colour"},
		{"name", nil, Options{Name: "Example\nCorp"}, "name", "control characters"},
		{"code template", nil, Options{Template: template.Must(template.New("corp.html").Parse(`<div style="x">`))}, "template", "corp.html (on a 400 page): <div style"},
	} {
		o := c.o
		if c.files != nil {
			o.FS, o.Source = c.files, "/etc/pages"
		}
		ps, err := New(o)
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != c.option || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (option %v), want %s: …%s…", c.name, err, oe, c.option, c.want)
		}
		if ps != nil {
			t.Errorf("%s: pages returned with the error", c.name)
		}
	}
}

// A template that fails only on some text (New tried every status, but
// not every text) answers the built-in page, with its own policy, and
// returns the error for the log.
func TestWriteFallsBack(t *testing.T) {
	ps, err := New(Options{FS: fstest.MapFS{"error.html": {Data: []byte(`<style>{{.CSS}}</style>{{if eq .RequestID "boom"}}{{index .Detail 99}}{{end}}<p>{{.Title}}</p>`)}}})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	err = ps.Write(rec, Page{Status: http.StatusForbidden, RequestID: "boom", Detail: "short"})
	if err == nil || !strings.Contains(err.Error(), "index out of range") {
		t.Errorf("error %v", err)
	}
	if body := rec.Body.String(); rec.Code != 403 || !strings.Contains(body, "You may not open this page.") {
		t.Errorf("%d:\n%s", rec.Code, body)
	}
	if csp := rec.Header().Get("Content-Security-Policy"); csp != Default().csp {
		t.Errorf("CSP %q, want the built-in page's", csp)
	}
}

// A directory mounted from a Kubernetes ConfigMap: the files are symbolic
// links into a hidden directory, which is ignored.
func TestNewConfigMapLayout(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "..2026_11_29_01_00_00.123")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "style.css"), []byte("h1 { letter-spacing: .02em }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(data), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..data", "style.css"), filepath.Join(dir, "style.css")); err != nil {
		t.Fatal(err)
	}
	ps, err := New(Options{FS: os.DirFS(dir), Source: dir})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	_ = ps.Write(rec, Page{Status: 401})
	if !strings.Contains(rec.Body.String(), "h1 { letter-spacing: .02em }") {
		t.Errorf("style.css not used:\n%s", rec.Body)
	}
}

// Pages loaded twice from the same files are the same (a reload keeps the
// plugin); a change in any file or option makes them differ.
func TestSame(t *testing.T) {
	load := func(tmpl, css string, o Options) *Pages {
		t.Helper()
		o.FS = fstest.MapFS{"error.html": {Data: []byte(tmpl)}, "style.css": {Data: []byte(css)}}
		ps, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	a := load("<p>{{.Title}}</p>", "p {}", Options{})
	code := template.Must(template.New("x").Parse("<p>{{.Title}}</p>"))
	plain, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		x, y *Pages
		same bool
	}{
		{"same files", a, load("<p>{{.Title}}</p>", "p {}", Options{}), true},
		{"template changed", a, load("<p>{{.Title}}!</p>", "p {}", Options{}), false},
		{"style changed", a, load("<p>{{.Title}}</p>", "p { }", Options{}), false},
		{"name changed", a, load("<p>{{.Title}}</p>", "p {}", Options{Name: "x"}), false},
		{"colour changed", a, load("<p>{{.Title}}</p>", "p {}", Options{Colors: Colors{Text: "red"}}), false},
		{"logo changed", a, load("<p>{{.Title}}</p>", "p {}", Options{Logo: pngLogo}), false},
		{"built-in", nil, plain, true},
		{"built-in and files", nil, a, false},
		{"code template", mustNew(t, Options{Template: code}), mustNew(t, Options{Template: code}), true},
		{"another code template", mustNew(t, Options{Template: code}), mustNew(t, Options{Template: template.Must(template.New("x").Parse("<p>{{.Title}}</p>"))}), false},
	} {
		if got := c.x.Same(c.y); got != c.same {
			t.Errorf("%s: Same = %v", c.name, got)
		}
	}
}

func mustNew(t *testing.T, o Options) *Pages {
	t.Helper()
	ps, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// Each problem of the directory is an error of its own, naming its file.
func TestNewReportsEveryFile(t *testing.T) {
	_, err := New(Options{Source: "/etc/pages", FS: fstest.MapFS{
		"eror.html":  {Data: []byte("x")},
		"styles.css": {Data: []byte("x")},
		"logo.gif":   {Data: []byte("not a gif")},
	}})
	errs := err.(interface{ Unwrap() []error }).Unwrap()
	var names []string
	for _, e := range errs {
		var oe *OptionError
		if !errors.As(e, &oe) || oe.Option != "dir" || strings.Contains(e.Error(), "\n") {
			t.Errorf("%q: not one problem of dir", e)
		}
		names = append(names, strings.SplitN(oe.Err.Error(), ":", 2)[0])
	}
	if want := "/etc/pages/eror.html /etc/pages/styles.css /etc/pages/logo.gif"; strings.Join(names, " ") != want {
		t.Errorf("errors name %v, want %s", names, want)
	}
}
