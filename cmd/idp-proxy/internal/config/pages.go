package config

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// Pages is the look of the HTML pages browser navigations get for
// refusals and errors (idp.PagesConfig): the deployment's own template,
// stylesheet and logo in a directory, or the built-in page with a logo, a
// name and colours. All read and checked at load (check-config reports a
// template's errors with their file and line) and at every reload.
type Pages struct {
	// Dir holds error.html (an html/template), style.css and logo.svg
	// (or .png, .jpg, .jpeg, .gif, .webp), each optional. [none: the
	// built-in page]
	Dir string `mapstructure:"dir"`
	// Logo is an image file shown above the heading (at most 64 KiB,
	// inlined); exclusive with a logo in Dir. [none]
	Logo string `mapstructure:"logo"`
	// Name is the site's name, in the title and next to the logo. [none]
	Name string `mapstructure:"name"`
	// Colors replace the built-in page's colours, in light and dark mode.
	Colors PageColors `mapstructure:"colors"`
	// DarkColors replace them in dark mode only.
	DarkColors PageColors `mapstructure:"dark_colors"`
}

// PageColors are CSS colours of the built-in page (idp.PageColors); ""
// keeps the built-in one.
type PageColors struct {
	Accent     string `mapstructure:"accent"`
	AccentText string `mapstructure:"accent_text"`
	Text       string `mapstructure:"text"`
	Background string `mapstructure:"background"`
	Muted      string `mapstructure:"muted"`
	Border     string `mapstructure:"border"`
	Error      string `mapstructure:"error"`
	Panel      string `mapstructure:"panel"`
}

func (c PageColors) colors() idp.PageColors {
	return idp.PageColors{Accent: c.Accent, AccentText: c.AccentText, Text: c.Text, Background: c.Background,
		Muted: c.Muted, Border: c.Border, Error: c.Error, Panel: c.Panel}
}

// load reads and checks the pages; nil (the built-in page, unchanged)
// when the section is empty. Each problem is a *KeyError of its key.
func (p Pages) load() (*idp.Pages, error) {
	if p == (Pages{}) {
		return nil, nil
	}
	pc := idp.PagesConfig{Dir: p.Dir, Name: p.Name, Colors: p.Colors.colors(), DarkColors: p.DarkColors.colors()}
	if p.Logo != "" {
		b, err := os.ReadFile(p.Logo)
		if err != nil {
			return nil, keyErrorf(keys("pages.logo"), "pages.logo: %w", err)
		}
		pc.Logo = b
	}
	pages, err := idp.NewPages(pc)
	if err == nil {
		return pages, nil
	}
	var errs []error
	for _, e := range flatten(err) {
		var ce *idp.ConfigError
		if !errors.As(e, &ce) {
			errs = append(errs, e)
			continue
		}
		key := fileKey(ce.Field)
		msg := ce.Reason
		if key == "pages.logo" {
			msg = fmt.Sprintf("pages.logo %s: %s", p.Logo, strings.TrimPrefix(ce.Reason, "pages.logo: "))
		}
		errs = append(errs, keyErrorf(keys(key), "%s", msg))
	}
	return nil, errors.Join(errs...)
}
