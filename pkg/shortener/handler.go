package shortener

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/idp-proxy/idp-proxy/internal/problem"
)

// MaxBodyBytes is the largest accepted POST /shorten body.
const MaxBodyBytes = 16 << 10

// redirectCacheControl is sent with every redirect. A 302 may be cached
// when it carries freshness information, so we say explicitly: no shared
// cache (CDN, corporate proxy) may keep it, since a link may be owner-scoped
// or taken down later, and browsers must revalidate on every use so that a
// takedown applies at once. Revalidation costs one fast lookup.
const redirectCacheControl = "private, max-age=0"

// Route is one route of Handler.
type Route struct {
	Method  string // "GET" also serves HEAD
	Pattern string // as http.ServeMux writes it
	// Identity marks a route that needs the caller's identity: Handler
	// serves it through Options.Authenticate.
	Identity bool
}

// Routes lists the routes Handler serves: the specification's three, the
// /links API, the OpenAPI document and, with Options.Page, the page and
// its assets.
func (s *Service) Routes() []Route {
	routes := []Route{
		{Method: http.MethodPost, Pattern: "/shorten", Identity: true},
		{Method: http.MethodGet, Pattern: "/health"},
		{Method: http.MethodGet, Pattern: "/openapi.json"},
		{Method: http.MethodGet, Pattern: "/links", Identity: true},
		{Method: http.MethodPost, Pattern: "/links", Identity: true},
		{Method: http.MethodGet, Pattern: "/links/{code}", Identity: true},
		{Method: http.MethodDelete, Pattern: "/links/{code}", Identity: true},
		{Method: http.MethodGet, Pattern: "/links/{code}/qr", Identity: true},
	}
	if s.page {
		routes = append(routes,
			Route{Method: http.MethodGet, Pattern: "/{$}"},
			Route{Method: http.MethodGet, Pattern: "/assets/app.js"},
			Route{Method: http.MethodGet, Pattern: "/assets/app.css"})
	}
	return append(routes, Route{Method: http.MethodGet, Pattern: "/{code}"})
}

// Handler returns the HTTP API of s (see Routes). Routing is done by hand
// (no regexp, no allocation) to keep redirects as cheap as a constant
// answer. The routes Routes marks with Identity go through
// Options.Authenticate; the unsafe methods of /links also through
// net/http's CrossOriginProtection.
func (s *Service) Handler() http.Handler {
	var shorten http.Handler = http.HandlerFunc(s.serveShorten)
	var links http.Handler = http.HandlerFunc(s.serveLinks)
	links = http.NewCrossOriginProtection().Handler(links)
	if s.authenticate != nil {
		shorten = s.authenticate(shorten)
		links = s.authenticate(links)
	}
	return handler{s: s, shorten: shorten, links: links}
}

type handler struct {
	s       *Service
	shorten http.Handler // POST /shorten, behind Options.Authenticate
	links   http.Handler // /links..., behind Options.Authenticate
}

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch path {
	case "/shorten":
		if r.Method != http.MethodPost {
			methodNotAllowed(w, "POST")
			return
		}
		h.shorten.ServeHTTP(w, r)
		return
	case "/health":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, "GET, HEAD")
			return
		}
		h.s.serveHealth(w, r)
		return
	case "/openapi.json":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, "GET, HEAD")
			return
		}
		serveOpenAPI(w, r)
		return
	case "/links":
		if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodPost {
			methodNotAllowed(w, "GET, HEAD, POST")
			return
		}
		h.links.ServeHTTP(w, r)
		return
	}
	if strings.HasPrefix(path, "/links/") {
		h.serveLinkPath(w, r, path[len("/links/"):])
		return
	}
	if h.s.page && (path == "/" || strings.HasPrefix(path, "/assets/")) {
		h.s.servePage(w, r)
		return
	}
	if len(path) < 2 || path[0] != '/' {
		problem.Write(w, http.StatusNotFound, "not found")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, "GET, HEAD")
		return
	}
	h.s.serveRedirect(w, r, path[1:])
}

// serveLinkPath checks the method of /links/{code} and /links/{code}/qr
// before the identity: a wrong method is a 405 for everyone.
func (h handler) serveLinkPath(w http.ResponseWriter, r *http.Request, rest string) {
	code, sub, _ := strings.Cut(rest, "/")
	switch {
	case code == "" || (sub != "" && sub != "qr") || strings.Contains(sub, "/"):
		problem.Write(w, http.StatusNotFound, "not found")
		return
	case sub == "qr" && r.Method != http.MethodGet && r.Method != http.MethodHead:
		methodNotAllowed(w, "GET, HEAD")
		return
	case sub == "" && r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodDelete:
		methodNotAllowed(w, "GET, HEAD, DELETE")
		return
	}
	h.links.ServeHTTP(w, r)
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	problem.Write(w, http.StatusMethodNotAllowed, "method not allowed; use "+allow)
}

const detailNotFound = "no link has this short code"

func (s *Service) serveRedirect(w http.ResponseWriter, r *http.Request, code string) {
	l, err := s.visit(r.Context(), code, r.Method != http.MethodHead)
	if err != nil {
		switch {
		case errors.Is(err, ErrNotFound):
			problem.Write(w, http.StatusNotFound, detailNotFound)
		case errors.Is(err, ErrGone):
			writeGone(w, r)
		default:
			s.log.ErrorContext(r.Context(), "shortener: resolve link", "code", code, "err", err)
			problem.Write(w, http.StatusServiceUnavailable, "the link store is unavailable; try again later")
		}
		return
	}
	// One allocation for both header values; the values are set directly
	// (not with Header.Set and not with http.Redirect) so that Location is
	// the stored URL byte for byte.
	vals := &[2]string{l.URL, redirectCacheControl}
	hdr := w.Header()
	hdr["Location"] = vals[0:1:1]
	hdr["Cache-Control"] = vals[1:2:2]
	w.WriteHeader(http.StatusFound)
}

const detailGone = "this link has expired or reached its maximum number of visits"

// goneHTML is the 410 page for browsers.
const goneHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Link gone</title></head>
<body style="font-family:system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;line-height:1.5">
<h1>This link is gone</h1><p>It has expired or reached its maximum number of visits.</p></body></html>
`

// writeGone answers 410: an HTML page for browsers, problem+json for API
// clients.
func writeGone(w http.ResponseWriter, r *http.Request) {
	if !acceptsHTML(r.Header.Get("Accept")) {
		problem.Write(w, http.StatusGone, detailGone)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Set("Content-Length", strconv.Itoa(len(goneHTML)))
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.WriteHeader(http.StatusGone)
	_, _ = io.WriteString(w, goneHTML)
}

// acceptsHTML reports whether an Accept header asks for HTML (browsers
// navigating), as opposed to API clients.
func acceptsHTML(accept string) bool {
	return accept != "" && mediaQuality(accept, "text/html") > 0 &&
		mediaQuality(accept, "text/html") >= mediaQuality(accept, "application/json")
}

// shortenResponse is the answer of POST /shorten: the specification's
// members, and the optional ones when they were given.
type shortenResponse struct {
	ShortCode string     `json:"short_code"`
	ShortURL  string     `json:"short_url"`
	URL       string     `json:"url"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	MaxVisits *int64     `json:"max_visits,omitempty"`
}

// readJSONBody checks the content type and size of a JSON request and
// reads it. It answers the error itself and returns ok false.
func readJSONBody(w http.ResponseWriter, r *http.Request) (body []byte, ok bool) {
	if !isJSON(r.Header.Get("Content-Type")) {
		problem.Write(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return nil, false
	}
	if r.ContentLength > MaxBodyBytes {
		problem.Write(w, http.StatusRequestEntityTooLarge, "request body is larger than 16 KiB")
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			problem.Write(w, http.StatusRequestEntityTooLarge, "request body is larger than 16 KiB")
			return nil, false
		}
		problem.Write(w, http.StatusBadRequest, "could not read the request body")
		return nil, false
	}
	if !utf8.Valid(body) {
		problem.Write(w, http.StatusBadRequest, "request body is not valid UTF-8")
		return nil, false
	}
	return body, true
}

func (s *Service) serveShorten(w http.ResponseWriter, r *http.Request) {
	body, ok := readJSONBody(w, r)
	if !ok {
		return
	}
	in, detail := parseLinkBody(body, false)
	if detail != "" {
		problem.Write(w, http.StatusBadRequest, detail)
		return
	}
	owner := ""
	if s.owner != nil {
		owner = s.owner(r)
	}
	l, ok := s.create(w, r, in, owner)
	if !ok {
		return
	}
	resp := shortenResponse{ShortCode: l.Code, ShortURL: s.ShortURL(l.Code), URL: l.URL}
	if !l.ExpiresAt.IsZero() {
		resp.ExpiresAt = &l.ExpiresAt
	}
	if l.MaxVisits > 0 {
		resp.MaxVisits = &l.MaxVisits
	}
	writeJSON(w, http.StatusCreated, resp, resp.ShortURL)
}

// create makes the link of a parsed body and answers the errors itself.
func (s *Service) create(w http.ResponseWriter, r *http.Request, in linkBody, owner string) (Link, bool) {
	l, err := s.Create(r.Context(), NewLink{URL: in.URL, Code: in.Code, ExpiresAt: in.ExpiresAt, MaxVisits: in.MaxVisits, Owner: owner})
	if err == nil {
		return l, true
	}
	if e, ok := errors.AsType[*InvalidURLError](err); ok {
		problem.Write(w, http.StatusBadRequest, "invalid url: "+e.Reason)
		return Link{}, false
	}
	if e, ok := errors.AsType[*InputError](err); ok {
		problem.Write(w, http.StatusBadRequest, "invalid "+e.Field+": "+e.Reason)
		return Link{}, false
	}
	if errors.Is(err, ErrConflict) {
		problem.Write(w, http.StatusConflict, "the short code is already in use; choose another")
		return Link{}, false
	}
	if errors.Is(err, context.Canceled) {
		// The client went away; the answer is lost anyway.
		s.log.InfoContext(r.Context(), "shortener: create canceled by the client", "err", err)
	} else {
		s.log.ErrorContext(r.Context(), "shortener: create link", "err", err)
	}
	problem.Write(w, http.StatusInternalServerError, "the link could not be stored; try again later")
	return Link{}, false
}

// writeJSON answers v as JSON (URLs unescaped), not cacheable, with a
// Location when location is not empty.
func writeJSON(w http.ResponseWriter, status int, v any, location string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep "&" in URLs readable
	_ = enc.Encode(v)
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(buf.Len()))
	hdr.Set("Cache-Control", "no-store")
	if location != "" {
		hdr["Location"] = []string{location}
	}
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// isJSON accepts "application/json" with, at most, a charset parameter equal
// to utf-8 (JSON is UTF-8 by definition, RFC 8259).
func isJSON(ct string) bool {
	if ct == "" {
		return false
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return false
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return false
		}
	}
	return true
}

type healthReport struct {
	Status  string `json:"status"`
	Service string `json:"service"`
}

// serveHealth answers the health report. Its 503 keeps the report's shape
// (not problem+json) so that monitors read one document in both cases.
func (s *Service) serveHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.healthTimeout)
	defer cancel()
	status, code := "healthy", http.StatusOK
	if err := s.store.Ping(ctx); err != nil {
		s.log.WarnContext(r.Context(), "shortener: health check failed", "err", err)
		status, code = "unhealthy", http.StatusServiceUnavailable
	}
	body, _ := json.Marshal(healthReport{Status: status, Service: "url_shortener"})
	body = append(body, '\n')
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	hdr.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
