package shortener

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"
	"strconv"
	"sync"

	"github.com/idp-proxy/idp-proxy/internal/problem"
)

// webFiles are the page and its assets: no build step, no external asset.
//
//go:embed web/index.html web/app.js web/app.css web/favicon.ico web/signed-out.html
var webFiles embed.FS

// pageCSP allows nothing but this origin's script, style, API calls and
// QR images (fetched as blobs).
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; " +
	"connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"

// pageData fills web/index.html.
type pageData struct {
	LoginURL    string
	LogoutURL   string
	CustomCodes bool
	MaxLimit    int
}

// pageCache holds the rendered page of a Handler (its data never
// changes).
type pageCache struct {
	once      sync.Once
	html      []byte
	signedOut []byte
	err       error
}

// render renders the page and the signed-out page, once.
func (h *Handler) render() error {
	h.pageOnce.once.Do(func() {
		data := pageData{LoginURL: h.loginURL, LogoutURL: h.logoutURL, CustomCodes: h.svc.customCodes, MaxLimit: MaxListLimit}
		for _, p := range []struct {
			name string
			out  *[]byte
		}{{"web/index.html", &h.pageOnce.html}, {"web/signed-out.html", &h.pageOnce.signedOut}} {
			tmpl, err := template.ParseFS(webFiles, p.name)
			if err != nil {
				h.pageOnce.err = err
				return
			}
			var buf bytes.Buffer
			if err := tmpl.Execute(&buf, data); err != nil {
				h.pageOnce.err = err
				return
			}
			*p.out = buf.Bytes()
		}
	})
	return h.pageOnce.err
}

// serveIndex answers GET /: the page, rendered once.
func (h *Handler) serveIndex(w http.ResponseWriter, r *http.Request) {
	if err := h.render(); err != nil {
		h.svc.log.ErrorContext(r.Context(), "shortener: render page", "err", err)
		problem.Write(w, http.StatusInternalServerError, "the page could not be rendered")
		return
	}
	writePageFile(w, h.pageOnce.html, "text/html; charset=utf-8")
}

// serveSignedOut answers GET /signed-out: where a sign-out ends (a
// post-logout redirect URI), with a link to sign in again. It needs no
// identity: a page that needed one would send the browser straight back
// to the sign-in.
func (h *Handler) serveSignedOut(w http.ResponseWriter, r *http.Request) {
	if err := h.render(); err != nil {
		h.svc.log.ErrorContext(r.Context(), "shortener: render page", "err", err)
		problem.Write(w, http.StatusInternalServerError, "the page could not be rendered")
		return
	}
	writePageFile(w, h.pageOnce.signedOut, "text/html; charset=utf-8")
}

// serveAsset answers GET of one of the page's assets.
func serveAsset(name, contentType string) http.HandlerFunc {
	body, _ := webFiles.ReadFile(name) // embedded: go:embed names it
	return func(w http.ResponseWriter, _ *http.Request) {
		writePageFile(w, body, contentType)
	}
}

// writePageFile answers the page or one of its assets.
func writePageFile(w http.ResponseWriter, body []byte, contentType string) {
	hdr := w.Header()
	hdr.Set("Content-Type", contentType)
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("Content-Security-Policy", pageCSP)
	hdr.Set("X-Frame-Options", "DENY")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
