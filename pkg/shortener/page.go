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
//go:embed web/index.html web/app.js web/app.css
var webFiles embed.FS

// pageCSP allows nothing but this origin's script, style, API calls and
// QR images (fetched as blobs).
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; " +
	"connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"

// pageData fills web/index.html.
type pageData struct {
	LoginURL    string
	CustomCodes bool
	MaxLimit    int
}

// pageCache holds the rendered page of a Handler (its data never
// changes).
type pageCache struct {
	once sync.Once
	html []byte
	err  error
}

// serveIndex answers GET /: the page, rendered once.
func (h *Handler) serveIndex(w http.ResponseWriter, r *http.Request) {
	h.pageOnce.once.Do(func() {
		tmpl, err := template.ParseFS(webFiles, "web/index.html")
		if err != nil {
			h.pageOnce.err = err
			return
		}
		var buf bytes.Buffer
		h.pageOnce.err = tmpl.Execute(&buf, pageData{LoginURL: h.loginURL, CustomCodes: h.svc.customCodes, MaxLimit: MaxListLimit})
		h.pageOnce.html = buf.Bytes()
	})
	if h.pageOnce.err != nil {
		h.svc.log.ErrorContext(r.Context(), "shortener: render page", "err", h.pageOnce.err)
		problem.Write(w, http.StatusInternalServerError, "the page could not be rendered")
		return
	}
	writePageFile(w, h.pageOnce.html, "text/html; charset=utf-8")
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
