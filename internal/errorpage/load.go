package errorpage

import (
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The files a deployment's directory may hold, each optional (at least
// one of them).
const (
	// TemplateFile is the page's html/template, executed with Data.
	TemplateFile = "error.html"
	// StyleFile is a stylesheet added after the built-in one (and after
	// the colours), in the same <style> element.
	StyleFile = "style.css"
	// LogoFile is the logo's name without its extension, one of
	// LogoExtensions: logo.svg, logo.png, ...
	LogoFile = "logo"
)

// LogoExtensions are the logo's possible extensions, by media type.
var LogoExtensions = map[string]string{
	".svg": "image/svg+xml", ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
	".gif": "image/gif", ".webp": "image/webp",
}

// Limits on a deployment's files: a page goes out whole with every
// refusal, its stylesheet and logo inline.
const (
	MaxTemplateBytes = 256 << 10
	MaxStyleBytes    = 256 << 10
	MaxLogoBytes     = 64 << 10
	MaxNameBytes     = 200
)

// Options are a deployment's own pages. The zero value is the built-in
// look.
type Options struct {
	// FS holds the deployment's files: TemplateFile, StyleFile and a logo
	// (LogoFile with one of LogoExtensions), each optional but at least
	// one. Other files, directories and dot files are ignored (a
	// Kubernetes ConfigMap mount holds some), but an .html or .css file,
	// or a logo.*, of another name is an error: a misspelt name would
	// otherwise be ignored silently. [nil]
	FS fs.FS
	// Source names FS in errors: the directory it reads. [""]
	Source string
	// Template replaces the built-in page.html, executed with Data;
	// exclusive with TemplateFile in FS. [nil]
	Template *template.Template
	// Logo is an image (PNG, JPEG, GIF, WebP or SVG) at most MaxLogoBytes
	// long, inlined in the page as a data: URI; exclusive with a logo in
	// FS. [none]
	Logo []byte
	// Name is the site's name, in the page's title and next to the logo.
	// [none]
	Name string
	// Colors replace the built-in page's colours, in light and dark mode.
	Colors Colors
	// DarkColors replace them in dark mode only (prefers-color-scheme).
	DarkColors Colors
}

// OptionError is a problem of one option of Options, named by its key in
// idp-proxy's pages section: "dir" (FS), "template", "logo", "name",
// "colors.accent", "dark_colors.text", ...
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string { return e.Option + ": " + e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }

// dirFiles are the files read from Options.FS.
type dirFiles struct {
	template, style, logo []byte
	logoName              string
}

// New builds pages from o: it parses the template, then executes it once
// on every status with sample data, so that a template error (its file
// and line) is an error here and never at request time, and checks each
// sample page against its Content-Security-Policy: an inline style,
// script, or anything loaded from elsewhere, which a browser would
// silently block, is an error too. The errors are *OptionError values,
// joined.
func New(o Options) (*Pages, error) {
	var errs []error
	bad := func(opt string, err error) { errs = append(errs, &OptionError{Option: opt, Err: err}) }
	var files dirFiles
	if o.FS != nil {
		var dirErrs []error
		files, dirErrs = readDir(o.FS, o.Source)
		for _, e := range dirErrs {
			bad("dir", e)
		}
	}
	ps := &Pages{tmpl: builtin.tmpl, name: o.Name}
	tmplOption, tmplBad := "template", false
	switch {
	case files.template != nil && o.Template != nil:
		tmplBad = true
		bad("template", fmt.Errorf("%s in the directory and a template: give one", TemplateFile))
	case files.template != nil:
		tmplOption = "dir"
		t, err := template.New(display(o.Source, TemplateFile)).Parse(string(files.template))
		if err != nil {
			tmplBad = true
			bad("dir", templateError(err))
		} else {
			ps.tmpl = t
		}
	case o.Template != nil:
		ps.tmpl = o.Template
	}
	css, cssErrs := stylesheet(display(o.Source, StyleFile), files.style, o.Colors, o.DarkColors)
	for _, e := range cssErrs {
		if oe, ok := e.(*OptionError); ok {
			errs = append(errs, oe)
		} else {
			bad("dir", e)
		}
	}
	ps.css = template.CSS(css)
	switch {
	case files.logo != nil && o.Logo != nil:
		bad("logo", fmt.Errorf("%s in the directory and a logo: give one", files.logoName))
	case files.logo != nil:
		var err error
		if ps.logo, err = dataURI(files.logo, LogoExtensions[path.Ext(files.logoName)]); err != nil {
			bad("dir", fmt.Errorf("%s: %w", display(o.Source, files.logoName), err))
		}
	case o.Logo != nil:
		var err error
		if ps.logo, err = dataURI(o.Logo, ""); err != nil {
			bad("logo", err)
		}
	}
	if err := checkName(o.Name); err != nil {
		bad("name", err)
	}
	if !tmplBad {
		styles, err := ps.check()
		if err != nil {
			bad(tmplOption, err)
		}
		ps.csp = policy(styles)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	ps.sum, ps.code = digest(files.template, css, ps.logo, ps.name), o.Template
	return ps, nil
}

// readDir reads the deployment's files from fsys; each error names its
// file.
func readDir(fsys fs.FS, source string) (dirFiles, []error) {
	var f dirFiles
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return f, []error{fmt.Errorf("%s: %w", display(source, "."), unwrapPath(err))}
	}
	var errs []error
	read := func(name string, limit int) []byte {
		b, err := fs.ReadFile(fsys, name)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", display(source, name), unwrapPath(err)))
			return nil
		case len(b) > limit:
			errs = append(errs, fmt.Errorf("%s: %d bytes, more than the %d a page may carry inline", display(source, name), len(b), limit))
			return nil
		}
		return b
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || e.IsDir() {
			continue // a ConfigMap mount's ..data, editors' dot files
		}
		ext := strings.ToLower(path.Ext(name))
		switch {
		case name == TemplateFile:
			f.template = read(name, MaxTemplateBytes)
		case name == StyleFile:
			f.style = read(name, MaxStyleBytes)
		case strings.TrimSuffix(name, path.Ext(name)) == LogoFile && LogoExtensions[path.Ext(name)] != "":
			if f.logoName != "" {
				errs = append(errs, fmt.Errorf("%s: two logos, %s and %s: keep one", display(source, "."), f.logoName, name))
				continue
			}
			f.logoName, f.logo = name, read(name, MaxLogoBytes)
		case ext == ".html" || ext == ".htm" || ext == ".css" || strings.HasPrefix(name, LogoFile+"."):
			errs = append(errs, fmt.Errorf("%s: not a file of the pages (%s, %s, %s.{%s})", display(source, name),
				TemplateFile, StyleFile, LogoFile, strings.Join(logoExtensions(), ",")))
		}
	}
	if len(errs) == 0 && f.template == nil && f.style == nil && f.logo == nil {
		errs = append(errs, fmt.Errorf("%s holds none of %s, %s, %s.{%s}", display(source, "."),
			TemplateFile, StyleFile, LogoFile, strings.Join(logoExtensions(), ",")))
	}
	return f, errs
}

func logoExtensions() []string {
	var exts []string
	for e := range LogoExtensions {
		exts = append(exts, strings.TrimPrefix(e, "."))
	}
	slices.Sort(exts)
	return exts
}

// display names the file name of the directory source in errors.
func display(source, name string) string {
	if source == "" {
		return name
	}
	return filepath.Join(source, name)
}

// unwrapPath drops the *fs.PathError's own path (relative to the FS): the
// caller names the file with its source.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// templateError is a template's parse or execution error, which names
// the file and line ("error.html:12: ..."), without the package's prefix.
func templateError(err error) error {
	msg := err.Error()
	for _, p := range []string{"template: ", "html/template:"} {
		msg = strings.TrimPrefix(msg, p)
	}
	return errors.New(msg)
}

// checkName checks the site's name: one line of text.
func checkName(name string) error {
	switch {
	case len(name) > MaxNameBytes:
		return fmt.Errorf("%d bytes, more than %d", len(name), MaxNameBytes)
	case !utf8.ValidString(name):
		return errors.New("not UTF-8")
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return fmt.Errorf("%q: control characters", name)
	}
	return nil
}
