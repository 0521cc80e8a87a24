package errorpage

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// Colors are the built-in page's colours, each a CSS colour: "#0b57d0",
// "#fff", "rebeccapurple", "rgb(11 87 208)", "oklch(0.5 0.2 260 / 80%)".
// An empty field keeps the built-in colour.
type Colors struct {
	Accent     string // links and buttons
	AccentText string // the text on a button
	Text       string
	Background string
	Muted      string // the status line at the bottom
	Border     string // the detail's frame
	Error      string // the detail's left bar
	Panel      string // the detail's background
}

// colorVars are the built-in stylesheet's custom properties, by the key
// of the field that sets each, in Colors' order.
var colorVars = []struct {
	key, prop string
	get       func(Colors) string
}{
	{"accent", "--accent", func(c Colors) string { return c.Accent }},
	{"accent_text", "--accent-fg", func(c Colors) string { return c.AccentText }},
	{"text", "--fg", func(c Colors) string { return c.Text }},
	{"background", "--bg", func(c Colors) string { return c.Background }},
	{"muted", "--muted", func(c Colors) string { return c.Muted }},
	{"border", "--line", func(c Colors) string { return c.Border }},
	{"error", "--err", func(c Colors) string { return c.Error }},
	{"panel", "--card", func(c Colors) string { return c.Panel }},
}

// cssColor is what a colour may be: a hex colour, a named colour, or a
// colour function of numbers, units, "/" and "none". Nothing else can
// reach the stylesheet (no ";", "}", quotes or "<"). Compiled on first
// use: most processes configure no colours, and every binary that links
// pkg/idp would otherwise compile it at start.
var cssColor = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(#([0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})|[a-zA-Z]{3,30}|(rgba?|hsla?|hwb|lab|lch|oklab|oklch)\([0-9a-zA-Z.,%/ +-]{1,80}\))$`)
})

// rootRule returns the :root rule that sets the colours of c (key is
// "colors" or "dark_colors", for the errors), "" when c sets none.
func (c Colors) rootRule(key string, errs *[]error) string {
	var b strings.Builder
	for _, v := range colorVars {
		val := strings.TrimSpace(v.get(c))
		if val == "" {
			continue
		}
		if !cssColor().MatchString(val) {
			*errs = append(*errs, &OptionError{Option: key + "." + v.key,
				Err: fmt.Errorf("%q is not a CSS colour: want #rgb, #rrggbb, a colour name or a colour function such as rgb(11 87 208)", val)})
			continue
		}
		b.WriteString(" " + v.prop + ": " + val + ";")
	}
	if b.Len() == 0 {
		return ""
	}
	return ":root {" + b.String() + " }\n"
}

// cssURL finds url(...) and @import in a stylesheet.
var cssURL = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)url\(\s*['"]?\s*([^'")\s]*)|@import`)
})

// stylesheet returns the page's stylesheet: the built-in one, the colours
// (dark after light, so that they win in dark mode), then the
// deployment's style.css, so that a few rules of its own override the
// rest. The errors of the colours are *OptionError values; those of
// style.css (named file in them) are plain errors naming the line.
func stylesheet(file string, style []byte, light, dark Colors) (string, []error) {
	var errs []error
	var b strings.Builder
	b.WriteString(string(builtin.css))
	if r := light.rootRule("colors", &errs); r != "" {
		b.WriteString(r)
	}
	if r := dark.rootRule("dark_colors", &errs); r != "" {
		b.WriteString("@media (prefers-color-scheme: dark) { " + strings.TrimSuffix(r, "\n") + " }\n")
	}
	if style != nil {
		errs = append(errs, checkStyle(file, style)...)
		b.Write(style)
		if !bytes.HasSuffix(style, []byte("\n")) {
			b.WriteByte('\n')
		}
	}
	return b.String(), errs
}

// checkStyle refuses a stylesheet that cannot sit in the page's <style>
// element, or would load what the Content-Security-Policy blocks; each
// error names file and line.
func checkStyle(file string, style []byte) []error {
	var errs []error
	for i, line := range strings.Split(string(style), "\n") {
		if strings.Contains(strings.ToLower(line), "</style") {
			errs = append(errs, fmt.Errorf("%s:%d: \"</style\" would end the page's <style> element", file, i+1))
		}
		for _, m := range cssURL().FindAllStringSubmatch(line, -1) {
			if m[0] == "@import" || strings.EqualFold(m[0], "@import") {
				errs = append(errs, fmt.Errorf("%s:%d: @import: the page loads no other stylesheet (its Content-Security-Policy blocks it): put the rules in this file", file, i+1))
			} else if !strings.HasPrefix(strings.ToLower(m[1]), "data:image/") {
				errs = append(errs, fmt.Errorf("%s:%d: url(%s): the page loads nothing from elsewhere (its Content-Security-Policy blocks it): inline images as data:image/... URIs", file, i+1, m[1]))
			}
		}
	}
	return errs
}
