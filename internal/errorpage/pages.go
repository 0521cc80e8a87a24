package errorpage

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/binary"
	"html/template"
	"net/http"
	"strconv"
	"strings"
)

//go:embed page.html page.css
var files embed.FS

// builtin is the built-in look: fixed, parsed once.
var builtin = mustBuiltin()

func mustBuiltin() *Pages {
	css, err := files.ReadFile("page.css")
	if err != nil {
		panic(err) // embedded by go:embed above: cannot fail
	}
	return &Pages{
		tmpl: template.Must(template.ParseFS(files, "page.html")),
		css:  template.CSS(css),
		csp:  policy([]string{string(css)}),
		sum:  digest(nil, string(css), "", ""),
	}
}

// Default returns the built-in pages.
func Default() *Pages { return builtin }

// Pages renders refusal pages: a template, the stylesheet it inlines, the
// Content-Security-Policy that allows exactly that stylesheet, and the
// branding. The zero value is not usable: see Default and New. A Pages is
// immutable and safe for concurrent use.
type Pages struct {
	tmpl *template.Template
	css  template.CSS
	csp  string
	logo template.URL
	name string
	// sum identifies what the pages were made of (the template file's
	// text, the stylesheet, the logo, the name), and code the template
	// given in Go: see Same.
	sum  [sha256.Size]byte
	code *template.Template
}

// Same reports whether ps and o were made of the same files and options
// (a reload that changed nothing); nil is the built-in pages.
func (ps *Pages) Same(o *Pages) bool {
	if ps == nil {
		ps = builtin
	}
	if o == nil {
		o = builtin
	}
	return ps.sum == o.sum && ps.code == o.code
}

// Data is what a page's template is executed with. Every string is text,
// escaped where the template puts it, but CSS and Logo, which the
// deployment's own files made and New checked.
type Data struct {
	Page
	// StatusText is the status's standard text ("Forbidden").
	StatusText string
	// CSS is the page's stylesheet: the built-in one, the colours and
	// style.css. Its hash is in the page's Content-Security-Policy: put it
	// in a <style> element ({{.CSS}}) whose content is fixed.
	CSS template.CSS
	// Logo is the logo as a data: URI, for an <img src>. [""]
	Logo template.URL
	// Name is the site's name. [""]
	Name string
}

// Write answers the page of p with p.Status. It sets the headers of a
// page that no cache keeps and no frame shows; cookies and other headers
// the caller set (WWW-Authenticate, Retry-After) are kept. Should the
// template fail on this page's data (New executed it on every status, so
// only a template that fails on some values of the text can), the
// built-in page is answered and the template's error returned, for the
// caller's log.
func (ps *Pages) Write(w http.ResponseWriter, p Page) error {
	h := w.Header()
	p = p.withDefaults(h)
	var buf bytes.Buffer
	csp := ps.csp
	err := ps.render(&buf, p)
	if err != nil && ps != builtin {
		buf.Reset()
		csp = builtin.csp
		_ = builtin.render(&buf, p) // fixed template, string fields: cannot fail
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", csp)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Add("Vary", "Accept, Sec-Fetch-Mode")
	w.WriteHeader(p.Status)
	_, _ = w.Write(buf.Bytes())
	return err
}

// render executes the template on p (defaults filled).
func (ps *Pages) render(buf *bytes.Buffer, p Page) error {
	return ps.tmpl.Execute(buf, Data{Page: p, StatusText: http.StatusText(p.Status), CSS: ps.css, Logo: ps.logo, Name: ps.name})
}

// digest is the Pages.sum of a template file's text (nil for none), a
// stylesheet, a logo and a name.
func digest(tmpl []byte, css string, logo template.URL, name string) [sha256.Size]byte {
	h := sha256.New()
	for _, part := range [][]byte{tmpl, []byte(css), []byte(logo), []byte(name)} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write(part)
	}
	return [sha256.Size]byte(h.Sum(nil))
}

// policy is the Content-Security-Policy of a page whose inline
// stylesheets are styles: nothing loads, nothing runs, but those
// stylesheets and data: images (the logo), and no site may frame it.
func policy(styles []string) string {
	var b strings.Builder
	b.WriteString("default-src 'none'; style-src")
	if len(styles) == 0 {
		b.WriteString(" 'none'")
	}
	for _, s := range styles {
		sum := sha256.Sum256([]byte(s))
		b.WriteString(" 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'")
	}
	b.WriteString("; img-src data:; base-uri 'none'; frame-ancestors 'none'")
	return b.String()
}
