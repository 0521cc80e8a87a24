package errorpage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"golang.org/x/net/html"
)

// sampleStatuses are the statuses the pages are checked on: every one
// the proxy and pkg/idp answer with a page, and one without a wording.
var sampleStatuses = []int{400, 401, 403, 404, 405, 408, 413, 418, 421, 429, 500, 502, 503, 504}

// samples returns the pages of status the template is checked on: one
// with no optional field, and two with every field, whose texts differ
// (to tell a <style> element that depends on them).
func samples(status int) [3]Page {
	return [3]Page{
		{Status: status},
		{Status: status, Title: "Sign-in failed", Summary: "The sign-in could not be completed.",
			Detail: `the token lacks a role: <script>alert("x")</script>`, User: "alice <b>",
			SignIn: "/auth/login?return_to=%2Fa%3Fb%3D1", SignOut: "/auth/logout", Retry: "/a?b=1&c=2", Home: "/", RequestID: "4bf92f3577b34da6"},
		{Status: status, Title: "Access denied", Summary: "Another summary.", Detail: "another detail", User: "bob",
			SignIn: "https://login.example.com/auth/login", SignOut: "/logout", Retry: "/b", Home: "https://example.com/", RequestID: "00f067aa0ba902b7"},
	}
}

// check executes the template on the samples of every status and checks
// each page against what its Content-Security-Policy allows. It returns
// the contents of the page's <style> elements, whose hashes the policy
// allows.
func (ps *Pages) check() ([]string, error) {
	var styles []string
	for _, status := range sampleStatuses {
		var seen [3][]string
		for i, p := range samples(status) {
			var buf bytes.Buffer
			if err := ps.render(&buf, p.withDefaults(http.Header{})); err != nil {
				return nil, templateError(err)
			}
			found, err := checkPage(buf.Bytes())
			if err != nil {
				return nil, fmt.Errorf("%s (on a %d page): %w", ps.tmpl.Name(), status, err)
			}
			seen[i] = found
			for _, s := range found {
				if !slices.Contains(styles, s) {
					styles = append(styles, s)
				}
			}
		}
		if !slices.Equal(seen[1], seen[2]) {
			return nil, fmt.Errorf("%s: a <style> element holds the page's data: its content must be fixed, such as {{.CSS}}, for its hash to be in the page's Content-Security-Policy", ps.tmpl.Name())
		}
	}
	return styles, nil
}

// fetching are the attributes of an element that make the browser load
// something.
var fetching = map[string]bool{"src": true, "srcset": true, "poster": true, "data": true, "background": true}

// checkPage returns the contents of the page's <style> elements, or
// what in the page its Content-Security-Policy would block: a script, an
// inline style attribute or event handler, a stylesheet, frame, object or
// image loaded from elsewhere (only data: images load). The browser would
// block them silently, so they are errors here.
func checkPage(page []byte) ([]string, error) {
	var styles []string
	z := html.NewTokenizer(bytes.NewReader(page))
	for {
		switch z.Next() {
		case html.ErrorToken:
			if errors.Is(z.Err(), io.EOF) {
				return styles, nil
			}
			return nil, z.Err()
		case html.StartTagToken, html.SelfClosingTagToken:
			t := z.Token()
			if err := checkElement(t); err != nil {
				return nil, err
			}
			if t.Data == "style" {
				var css string
				if z.Next() == html.TextToken {
					css = string(z.Raw()) // the raw text, as the browser hashes it
				}
				styles = append(styles, css)
			}
		}
	}
}

// checkElement reports what of t the page's policy blocks.
func checkElement(t html.Token) error {
	switch t.Data {
	case "script":
		return errors.New("<script>: the page runs no script (its Content-Security-Policy blocks it)")
	case "iframe", "frame", "object", "embed", "applet":
		return fmt.Errorf("<%s>: the page loads nothing from elsewhere (its Content-Security-Policy blocks it)", t.Data)
	case "base":
		return errors.New("<base>: the page's Content-Security-Policy blocks it (base-uri 'none')")
	case "link":
		for _, a := range t.Attr {
			if a.Key == "rel" && !slices.ContainsFunc(strings.Fields(strings.ToLower(a.Val)), func(r string) bool {
				return r == "alternate" || r == "canonical" || r == "author" || r == "help" || r == "license" ||
					r == "next" || r == "prev" || r == "search" || r == "noopener" || r == "noreferrer"
			}) {
				return fmt.Errorf("<link rel=%q>: the page loads nothing from elsewhere (its Content-Security-Policy blocks it): put styles in style.css and the logo in the logo file", a.Val)
			}
		}
	}
	for _, a := range t.Attr {
		switch {
		case a.Key == "style":
			return fmt.Errorf("<%s style=%q>: the page's Content-Security-Policy blocks style attributes: put the rules in style.css", t.Data, a.Val)
		case strings.HasPrefix(a.Key, "on"):
			return fmt.Errorf("<%s %s>: the page runs no script (its Content-Security-Policy blocks it)", t.Data, a.Key)
		case fetching[a.Key] && !strings.HasPrefix(a.Val, "data:image/"):
			return fmt.Errorf("<%s %s=%q>: the page loads nothing from elsewhere (its Content-Security-Policy blocks it): inline the image as a data:image/... URI, or use the logo ({{.Logo}})", t.Data, a.Key, a.Val)
		}
	}
	return nil
}
