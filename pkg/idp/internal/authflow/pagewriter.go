package authflow

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/idp-proxy/idp-proxy/internal/errorpage"
	"github.com/idp-proxy/idp-proxy/internal/problem"
)

// authPageWriter turns the problem+json refusals of the /auth routes into
// the sign-in's error page when the request is a navigation (a browser
// coming back from the provider to the callback, or following a login
// link): every refusal of the routes, present and future, gets it, while
// their answers to programs stay byte for byte what they were.
type authPageWriter struct {
	http.ResponseWriter
	a       *authRoutes
	status  int // the refusal's status while it is held back, 0 otherwise
	problem bytes.Buffer
	// misconfigured: the provider refused the client itself (see
	// markMisconfigured); signing in again cannot help.
	misconfigured bool
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (pw *authPageWriter) Unwrap() http.ResponseWriter { return pw.ResponseWriter }

// markMisconfigured tells the page of the refusal about to be written
// that the provider refused this client's credentials.
func markMisconfigured(w http.ResponseWriter) {
	if pw, ok := w.(*authPageWriter); ok {
		pw.misconfigured = true
	}
}

func (pw *authPageWriter) WriteHeader(status int) {
	if pw.status == 0 && status >= 400 && pw.Header().Get("Content-Type") == problem.ContentType {
		pw.status = status // held back: finish writes the page
		return
	}
	pw.ResponseWriter.WriteHeader(status)
}

func (pw *authPageWriter) Write(b []byte) (int, error) {
	if pw.status != 0 {
		return pw.problem.Write(b)
	}
	return pw.ResponseWriter.Write(b)
}

// finish writes the page of a held-back refusal.
func (pw *authPageWriter) finish() {
	if pw.status == 0 {
		return
	}
	var d problem.Details
	_ = json.Unmarshal(pw.problem.Bytes(), &d) // written by problem.Write: well-formed
	h := pw.Header()
	h.Del("Content-Length")
	h.Del("Content-Type")
	pg := errorpage.Page{Status: pw.status, Detail: d.Detail, Home: "/",
		Title: "Sign-in failed", Summary: "The sign-in could not be completed."}
	switch {
	case pw.misconfigured:
		pg.Title, pg.Summary = "Sign-in is misconfigured",
			"The identity provider does not accept this site's sign-in configuration. Signing in again will not help: tell the site's operator."
	case pw.status == http.StatusServiceUnavailable:
		pg.Title, pg.Summary = "Sign-in unavailable", "The sign-in service is not ready. Try again in a moment."
		pg.SignIn = pw.a.d.Site.LoginURL("/")
	default:
		pg.SignIn = pw.a.d.Site.LoginURL("/")
	}
	pw.a.d.WritePage(pw.ResponseWriter, pg)
}
