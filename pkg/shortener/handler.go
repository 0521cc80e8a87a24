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

// Routes lists the routes Handler serves.
func (s *Service) Routes() []Route {
	return []Route{
		{Method: http.MethodPost, Pattern: "/shorten", Identity: true},
		{Method: http.MethodGet, Pattern: "/health"},
		{Method: http.MethodGet, Pattern: "/{code}"},
	}
}

// Handler returns the HTTP API of s: POST /shorten, GET|HEAD /health and
// GET|HEAD /{code}. Routing is done by hand (no regexp, no allocation) to
// keep redirects as cheap as a constant answer. The routes Routes marks
// with Identity go through Options.Authenticate.
func (s *Service) Handler() http.Handler {
	var shorten http.Handler = http.HandlerFunc(s.serveShorten)
	if s.authenticate != nil {
		shorten = s.authenticate(shorten)
	}
	return handler{s: s, shorten: shorten}
}

type handler struct {
	s       *Service
	shorten http.Handler // POST /shorten, behind Options.Authenticate
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

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	problem.Write(w, http.StatusMethodNotAllowed, "method not allowed; use "+allow)
}

const detailNotFound = "no link has this short code"

func (s *Service) serveRedirect(w http.ResponseWriter, r *http.Request, code string) {
	if !s.ValidCode(code) {
		problem.Write(w, http.StatusNotFound, detailNotFound)
		return
	}
	l, err := s.lookup(r.Context(), code)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			problem.Write(w, http.StatusNotFound, detailNotFound)
			return
		}
		s.log.ErrorContext(r.Context(), "shortener: resolve link", "code", code, "err", err)
		problem.Write(w, http.StatusServiceUnavailable, "the link store is unavailable; try again later")
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

type shortenResponse struct {
	ShortCode string `json:"short_code"`
	ShortURL  string `json:"short_url"`
	URL       string `json:"url"`
}

func (s *Service) serveShorten(w http.ResponseWriter, r *http.Request) {
	if !isJSON(r.Header.Get("Content-Type")) {
		problem.Write(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	if r.ContentLength > MaxBodyBytes {
		problem.Write(w, http.StatusRequestEntityTooLarge, "request body is larger than 16 KiB")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			problem.Write(w, http.StatusRequestEntityTooLarge, "request body is larger than 16 KiB")
			return
		}
		problem.Write(w, http.StatusBadRequest, "could not read the request body")
		return
	}
	if !utf8.Valid(body) {
		problem.Write(w, http.StatusBadRequest, "request body is not valid UTF-8")
		return
	}
	raw, detail := parseShortenBody(body)
	if detail != "" {
		problem.Write(w, http.StatusBadRequest, detail)
		return
	}
	owner := ""
	if s.owner != nil {
		owner = s.owner(r)
	}
	l, err := s.Shorten(r.Context(), raw, owner)
	if err != nil {
		if e, ok := errors.AsType[*InvalidURLError](err); ok {
			problem.Write(w, http.StatusBadRequest, "invalid url: "+e.Reason)
			return
		}
		if errors.Is(err, context.Canceled) {
			// The client went away; the answer is lost anyway.
			s.log.InfoContext(r.Context(), "shortener: create canceled by the client", "err", err)
		} else {
			s.log.ErrorContext(r.Context(), "shortener: create link", "err", err)
		}
		problem.Write(w, http.StatusInternalServerError, "the link could not be stored; try again later")
		return
	}
	shortURL := s.ShortURL(l.Code)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep "&" in URLs readable
	_ = enc.Encode(shortenResponse{ShortCode: l.Code, ShortURL: shortURL, URL: l.URL})
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(buf.Len()))
	hdr.Set("Cache-Control", "no-store")
	hdr["Location"] = []string{shortURL}
	w.WriteHeader(http.StatusCreated)
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

// parseShortenBody extracts the "url" member of a JSON object. It returns a
// non-empty user-facing detail when the body is not a single JSON object,
// when "url" is missing, not a string or present twice. Other members are
// ignored. Member names are matched exactly (encoding/json would match
// "URL" too, which hides duplicates).
func parseShortenBody(body []byte) (string, string) {
	const notObject = "request body must be a JSON object such as {\"url\":\"https://example.com/\"}"
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return "", notObject
	}
	var (
		raw  string
		seen bool
	)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", "request body is not valid JSON"
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return "", "request body is not valid JSON"
		}
		if key != "url" {
			continue
		}
		if seen {
			return "", "the member \"url\" appears more than once"
		}
		seen = true
		if len(val) == 0 || val[0] != '"' || json.Unmarshal(val, &raw) != nil {
			return "", "the member \"url\" must be a string"
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return "", "request body is not valid JSON"
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", "request body must hold a single JSON object"
	}
	if !seen {
		return "", "the member \"url\" is required"
	}
	return raw, ""
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
