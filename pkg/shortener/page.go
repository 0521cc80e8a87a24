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

// pageCache holds the rendered page of a Service (its data never
// changes).
type pageCache struct {
	once sync.Once
	html []byte
	err  error
}

// servePage answers GET / and GET /assets/app.js|app.css.
func (s *Service) servePage(w http.ResponseWriter, r *http.Request) {
	var (
		body []byte
		ct   string
	)
	switch r.URL.Path {
	case "/":
		s.pageOnce.once.Do(func() {
			tmpl, err := template.ParseFS(webFiles, "web/index.html")
			if err != nil {
				s.pageOnce.err = err
				return
			}
			var buf bytes.Buffer
			s.pageOnce.err = tmpl.Execute(&buf, pageData{LoginURL: s.loginURL, CustomCodes: s.customCodes, MaxLimit: MaxListLimit})
			s.pageOnce.html = buf.Bytes()
		})
		if s.pageOnce.err != nil {
			s.log.ErrorContext(r.Context(), "shortener: render page", "err", s.pageOnce.err)
			problem.Write(w, http.StatusInternalServerError, "the page could not be rendered")
			return
		}
		body, ct = s.pageOnce.html, "text/html; charset=utf-8"
	case "/assets/app.js":
		body, _ = webFiles.ReadFile("web/app.js")
		ct = "text/javascript; charset=utf-8"
	case "/assets/app.css":
		body, _ = webFiles.ReadFile("web/app.css")
		ct = "text/css; charset=utf-8"
	default:
		problem.Write(w, http.StatusNotFound, "not found")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, "GET, HEAD")
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", ct)
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("Content-Security-Policy", pageCSP)
	hdr.Set("X-Frame-Options", "DENY")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
