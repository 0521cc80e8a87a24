package shortener

import (
	"context"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/idp-proxy/idp-proxy/internal/jsondoc"
	"github.com/idp-proxy/idp-proxy/internal/problem"
)

// MaxBodyBytes is the largest accepted POST /shorten body.
const MaxBodyBytes = 16 << 10

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
	return readBody(w, r, isJSON)
}

// readBody is readJSONBody for the content types that accept admits.
func readBody(w http.ResponseWriter, r *http.Request, accept func(contentType string) bool) (body []byte, ok bool) {
	if !accept(r.Header.Get("Content-Type")) {
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
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			// Sent slower than the server's read timeout: the client's
			// fault, told apart from a malformed body.
			w.Header().Set("Connection", "close")
			problem.Write(w, http.StatusRequestTimeout, "the request body did not arrive in time")
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

// serveShorten answers POST /shorten.
func (h *Handler) serveShorten(w http.ResponseWriter, r *http.Request) {
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
	if h.owner != nil {
		owner = h.owner(r)
	}
	l, ok := h.create(w, r, in, owner)
	if !ok {
		return
	}
	resp := shortenResponse{ShortCode: l.Code, ShortURL: h.svc.ShortURL(l.Code), URL: l.URL}
	if !l.ExpiresAt.IsZero() {
		resp.ExpiresAt = &l.ExpiresAt
	}
	if l.MaxVisits > 0 {
		resp.MaxVisits = &l.MaxVisits
	}
	jsondoc.Write(w, http.StatusCreated, resp, jsondoc.Options{RawHTML: true, Location: resp.ShortURL})
}

// create makes the link of a parsed body and answers the errors itself.
func (h *Handler) create(w http.ResponseWriter, r *http.Request, in linkBody, owner string) (Link, bool) {
	l, err := h.svc.Create(r.Context(), NewLink{URL: in.URL, Code: in.Code, ExpiresAt: in.ExpiresAt, MaxVisits: in.MaxVisits, Owner: owner})
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
		h.svc.log.InfoContext(r.Context(), "shortener: create canceled by the client", "err", err)
	} else {
		h.svc.log.Log(r.Context(), storeErrorLevel(err), "shortener: create link", "err", err)
	}
	writeStoreUnavailable(w)
	return Link{}, false
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
