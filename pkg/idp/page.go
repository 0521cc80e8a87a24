package idp

import (
	"net/http"
	"strings"

	"github.com/idp-proxy/idp-proxy/internal/errorpage"
	"github.com/idp-proxy/idp-proxy/internal/problem"
)

// WantsPage reports whether r is a browser navigation, which gets an HTML
// page for a refusal, rather than a program's request, which gets
// application/problem+json. Sec-Fetch-Mode decides when the browser sends
// it ("navigate" is a navigation, every other mode is not); without it,
// the Accept header must rank text/html above every range that covers
// JSON ("*/*" alone, as curl sends it, is not a navigation).
func WantsPage(r *http.Request) bool { return errorpage.Wanted(r) }

// WriteProblem answers status with detail (short, never secret) as
// WriteVerdict answers its refusals: application/problem+json for
// programs, and for a browser navigation (WantsPage) a small HTML page
// with the same status that says what happened and offers the way on
// (sign in again, sign out, try again, back to "/"). Headers already set
// on w (WWW-Authenticate, Retry-After, cookies) are kept.
func (p *Plugin) WriteProblem(w http.ResponseWriter, r *http.Request, status int, detail string) {
	if !WantsPage(r) {
		problem.Write(w, status, detail)
		return
	}
	p.writePage(w, r, status, detail, nil)
}

// writePage answers the page of a refusal of r; id is the identity a
// guard refused (403), nil otherwise.
func (p *Plugin) writePage(w http.ResponseWriter, r *http.Request, status int, detail string, id *Identity) {
	pg := errorpage.Page{Status: status, Detail: detail, Home: "/"}
	routes := p.cfg.IncludeRoutes
	switch status {
	case http.StatusUnauthorized:
		if routes {
			pg.SignIn = p.LoginURLFor(r)
		}
	case http.StatusForbidden:
		if id != nil && id.User != nil {
			pg.Summary = "You are signed in, but your account is not allowed to open this page."
			pg.User = id.User.PreferredUsername
			if pg.User == "" {
				pg.User = id.User.Email
			}
		}
		if routes && p.sessions != nil {
			// To come back as someone else: the session's sign-out.
			pg.SignOut = strings.TrimSuffix(p.cfg.AuthPrefix, "/") + "/logout"
		}
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			pg.Retry = r.URL.RequestURI()
		}
	}
	p.answerPage(w, pg)
}

// answerPage writes pg with the configured pages (Config.Pages). A
// template that fails on this page's text (NewPages checked it on every
// status) answers the built-in page, logged.
func (p *Plugin) answerPage(w http.ResponseWriter, pg errorpage.Page) {
	if err := p.cfg.Pages.renderer().Write(w, pg); err != nil {
		p.cfg.Logger.Warn("idp: the page template failed: the built-in page was answered", "status", pg.Status, "error", err)
	}
}
