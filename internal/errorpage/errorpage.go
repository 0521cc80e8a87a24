// Package errorpage renders the small HTML page that a browser navigation
// gets instead of an application/problem+json refusal: what happened, and
// the way on (sign in again, sign out, try again, back). Programs keep
// getting problem+json; Wanted tells the two apart.
//
// The page is one html/template (contextual escaping: the detail, the user
// name and the links are data, never markup) with its stylesheet inline,
// allowed by its hash in the page's Content-Security-Policy: it needs no
// asset of its own, so it works in front of any upstream. New builds a
// deployment's own pages (its template, stylesheet, colours and logo),
// checked once when loaded so that no mistake in them surfaces as an error
// at request time.
package errorpage

import (
	"net/http"
	"strconv"
	"strings"
)

// Page is what a refusal page says. Every field but Status is optional:
// Title and Summary default to a wording of Status, and a link left empty
// is not shown.
type Page struct {
	// Status is the HTTP status of the answer.
	Status int
	// Title is the heading ("Access denied"). [by Status]
	Title string
	// Summary says in a sentence what happened. [by Status]
	Summary string
	// Detail is the refusal's problem+json detail, shown as is (escaped).
	Detail string
	// User names the signed-in user, when the refusal knows one (403).
	User string
	// SignIn is the URL of the sign-in ("Sign in again").
	SignIn string
	// SignOut is the URL the "Sign out" button POSTs to.
	SignOut string
	// Retry is the URL to load again ("Try again"), for a refusal that may
	// pass later (502, 503, 504).
	Retry string
	// Home is the URL of "Back to the home page".
	Home string
	// RequestID is shown for support. [the answer's X-Request-Id header]
	RequestID string
}

// wording is the default title and summary of a status.
var wording = map[int][2]string{
	http.StatusBadRequest:            {"Bad request", "The request could not be understood, so it was not passed on."},
	http.StatusUnauthorized:          {"Sign-in required", "This page needs you to sign in, or your sign-in is no longer valid."},
	http.StatusForbidden:             {"Access denied", "You may not open this page."},
	http.StatusNotFound:              {"Not found", "There is nothing at this address."},
	http.StatusMethodNotAllowed:      {"Method not allowed", "This address does not accept this kind of request."},
	http.StatusRequestTimeout:        {"Request timeout", "The request did not arrive in time."},
	http.StatusRequestEntityTooLarge: {"Request too large", "The request is larger than this site accepts."},
	http.StatusMisdirectedRequest:    {"Unknown site", "This server serves no site at this address. Check the address you typed or followed."},
	http.StatusBadGateway:            {"Service unavailable", "The service behind the sign-in did not answer properly. Try again in a moment."},
	http.StatusServiceUnavailable:    {"Temporarily unavailable", "The sign-in service is not ready. Try again in a moment."},
	http.StatusGatewayTimeout:        {"The service did not answer in time", "The service behind the sign-in took too long to answer. Try again in a moment."},
}

// Write answers the page with p.Status in the built-in look (Default).
func Write(w http.ResponseWriter, p Page) { _ = Default().Write(w, p) }

// withDefaults fills the title and summary of p's status and its
// request id from the answer's X-Request-Id.
func (p Page) withDefaults(h http.Header) Page {
	if p.Status == 0 {
		p.Status = http.StatusInternalServerError
	}
	if def, ok := wording[p.Status]; ok {
		if p.Title == "" {
			p.Title = def[0]
		}
		if p.Summary == "" {
			p.Summary = def[1]
		}
	}
	if p.Title == "" {
		p.Title = http.StatusText(p.Status)
	}
	if p.Summary == "" {
		p.Summary = "The request could not be served."
	}
	if p.RequestID == "" {
		p.RequestID = h.Get("X-Request-Id")
	}
	if len(p.RequestID) > 128 {
		p.RequestID = p.RequestID[:128]
	}
	return p
}

// Wanted reports whether r is a browser navigation, which gets a page,
// rather than a program's request, which gets problem+json:
//
//   - Sec-Fetch-Mode decides when present (every current browser sends
//     it, and a script cannot set it): "navigate" is a navigation, any
//     other mode (cors, no-cors, same-origin, websocket) is not.
//   - Without it (older browsers, tools), the Accept header decides: a
//     navigation names text/html (or application/xhtml+xml) with a higher
//     quality than any media range that covers JSON (application/json,
//     application/problem+json, application/*, */*). "*/*" alone, as
//     curl sends, or a tie is not a navigation.
func Wanted(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Mode") {
	case "navigate", "nested-navigate":
		return true
	case "":
		return prefersHTML(r.Header.Values("Accept"))
	}
	return false
}

// prefersHTML reports whether the Accept values rank HTML above JSON.
func prefersHTML(accept []string) bool {
	html, json := -1.0, -1.0
	for _, a := range accept {
		for part := range strings.SplitSeq(a, ",") {
			mt, params, _ := strings.Cut(part, ";")
			mt = strings.ToLower(strings.TrimSpace(mt))
			q := quality(params)
			switch mt {
			case "text/html", "application/xhtml+xml":
				html = max(html, q)
			case "application/json", "application/problem+json", "application/*", "*/*":
				json = max(json, q)
			}
		}
	}
	return html > 0 && html > json
}

// quality is the q parameter among params (1 when absent, 0 when
// malformed: a malformed entry never makes a page).
func quality(params string) float64 {
	for p := range strings.SplitSeq(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || q < 0 || q > 1 {
			return 0
		}
		return q
	}
	return 1
}
