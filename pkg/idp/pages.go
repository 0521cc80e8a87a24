package idp

import (
	"errors"
	"html/template"
	"io/fs"
	"os"
	"reflect"

	"github.com/idp-proxy/idp-proxy/internal/errorpage"
	"github.com/idp-proxy/idp-proxy/internal/fielderr"
)

// PagesConfig is a deployment's own look for the HTML pages a browser
// navigation gets instead of problem+json (refusals, errors, the
// sign-in's error pages): a template of its own, or the built-in page
// with a stylesheet, colours, a logo and a name. Every field is optional;
// the zero value is the built-in page.
//
// The files of Dir (or FS), each optional but at least one:
//
//	error.html  an html/template, executed with the data below
//	style.css   rules added after the built-in stylesheet and the
//	            colours, in the same <style> element
//	logo.svg    the logo (or logo.png, .jpg, .jpeg, .gif, .webp), at most
//	            64 KiB, inlined as a data: URI
//
// Other files, directories and dot files are ignored (a Kubernetes
// ConfigMap mount has some), but another .html or .css file, or another
// logo.*, is an error: a misspelt name is never ignored silently.
//
// The template's data (every text escaped by html/template where the
// template puts it):
//
//	.Status      int: the HTTP status (401)
//	.StatusText  its standard text ("Unauthorized")
//	.Title       the heading ("Sign-in required", "Access denied",
//	             "Sign-in failed")
//	.Summary     a sentence saying what happened
//	.Detail      the refusal's detail, as in its problem+json ("" for none)
//	.User        the signed-in user a 403 refused ("" otherwise)
//	.SignIn      the sign-in URL ("Sign in again"; "" when there is none)
//	.SignOut     the URL a "Sign out" form POSTs to ("" without sessions)
//	.Retry       the URL to load again, for a 502, 503 or 504 ("" else)
//	.Home        the home page's URL ("/")
//	.RequestID   the answer's X-Request-Id, for support
//	.CSS         the stylesheet: the built-in one, the colours, style.css
//	.Logo        the logo as a data: URI ("" without one)
//	.Name        the site's name ("" without one)
//
// The page's Content-Security-Policy lets it load nothing and run
// nothing: it allows the page's <style> elements by their hashes, and
// data: images. So style goes in a <style> element of fixed content
// (<style>{{.CSS}}</style>), images are data: URIs ({{.Logo}}), and there
// is no script. NewPages executes the template on every status with
// sample data, and refuses what would fail or be blocked, naming the file
// and line: an error in the pages is a configuration error, never a 500
// or an unstyled page at request time.
type PagesConfig struct {
	// Dir is a directory holding the files above, read once by NewPages
	// and named in its errors. Exclusive with FS. [none]
	Dir string
	// FS holds the files above, e.g. an embed.FS (fs.Sub to its
	// directory). Exclusive with Dir. [none]
	FS fs.FS
	// Template replaces the built-in page, executed with the data above;
	// for templates built in Go (with functions of their own).
	// Exclusive with an error.html in Dir or FS. NewPages executes it,
	// so html/template allows no further Parse. [the built-in page]
	Template *template.Template
	// Logo is the content of an image file (PNG, JPEG, GIF, WebP or SVG,
	// at most 64 KiB), shown above the heading of the built-in page
	// ({{.Logo}} in a template). Exclusive with a logo in Dir or FS. [none]
	Logo []byte
	// Name is the site's name: in the built-in page's title and next to
	// its logo ({{.Name}} in a template). [none]
	Name string
	// Colors replace the built-in page's colours, in light and dark mode.
	Colors PageColors
	// DarkColors replace them in dark mode only (the browser's
	// prefers-color-scheme), after Colors.
	DarkColors PageColors
}

// PageColors are colours of the built-in page, each a CSS colour
// ("#0b57d0", "#fff", "rebeccapurple", "rgb(11 87 208)", "oklch(0.55 0.2
// 260)"); an empty field keeps the built-in colour.
type PageColors struct {
	Accent     string // links and buttons [#0b57d0; dark #8ab4f8]
	AccentText string // the text on a button [#fff; dark #0b0b0f]
	Text       string // [#1b1b1f; dark #e6e6ea]
	Background string // [#fff; dark #121216]
	Muted      string // the status line [#5b5b66; dark #a8a8b3]
	Border     string // the detail's frame [#d0d0d7; dark #3a3a44]
	Error      string // the detail's left bar [#b3261e; dark #f2b8b5]
	Panel      string // the detail's background [#f6f6f9; dark #1d1d23]
}

func (c PageColors) internal() errorpage.Colors {
	return errorpage.Colors{Accent: c.Accent, AccentText: c.AccentText, Text: c.Text, Background: c.Background,
		Muted: c.Muted, Border: c.Border, Error: c.Error, Panel: c.Panel}
}

// Pages are the HTML pages of a PagesConfig, loaded and checked: give
// them to Config.Pages. Immutable and safe for concurrent use; one Pages
// may serve several plugins.
type Pages struct {
	r *errorpage.Pages
}

// NewPages reads, parses and checks c. Every problem is a *ConfigError
// wrapping ErrConfig, its Field the Go path of the PagesConfig field under
// Config's Pages ("Pages.Dir", "Pages.Logo", "Pages.Colors.Accent", ...),
// its Reason
// naming the file and line where there is one ("pages.dir:
// /etc/idp-proxy/pages/error.html:12: function \"upper\" not defined").
func NewPages(c PagesConfig) (*Pages, error) {
	o := errorpage.Options{Template: c.Template, Logo: c.Logo, Name: c.Name,
		Colors: c.Colors.internal(), DarkColors: c.DarkColors.internal()}
	switch {
	case c.Dir != "" && c.FS != nil:
		return nil, pagesError("dir", "pages: Dir and FS are exclusive: give one")
	case c.Dir != "":
		o.FS, o.Source = os.DirFS(c.Dir), c.Dir
	case c.FS != nil:
		o.FS = c.FS
	}
	r, err := errorpage.New(o)
	if err != nil {
		var errs []error
		for _, e := range unjoin(err) {
			var oe *errorpage.OptionError
			if errors.As(e, &oe) {
				errs = append(errs, pagesError(oe.Option, "pages.%s", oe.Error()))
			} else {
				errs = append(errs, configError("pages", false, "pages: %s", e.Error()))
			}
		}
		return nil, errors.Join(errs...)
	}
	return &Pages{r: r}, nil
}

// Same reports whether ps and o were made of the same files and options
// (a configuration reload that left them alone). A Template given in Go
// is the same only as itself. nil is the built-in page.
func (ps *Pages) Same(o *Pages) bool { return ps.renderer().Same(o.renderer()) }

// unjoin returns the errors joined in err, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// renderer returns the pages to answer with: ps's, or the built-in ones
// for nil.
func (ps *Pages) renderer() *errorpage.Pages {
	if ps == nil {
		return errorpage.Default()
	}
	return ps.r
}

// pagesError is the problem of the PagesConfig field its specification
// key names ("logo", "colors.accent"), under Config's Pages.
func pagesError(key string, format string, args ...any) *ConfigError {
	return fielderr.New(ErrConfig.Error()+": ", ErrConfig, false, "Pages."+goPath(reflect.TypeFor[PagesConfig](), key), nil, format, args...)
}
