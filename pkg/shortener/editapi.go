package shortener

import (
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/jsondoc"
	"github.com/idp-proxy/idp-proxy/internal/problem"
)

// parseEditBody reads the JSON object of PATCH /links/{code}: any of url
// (a string), expires_at (an RFC 3339 string, or null to clear it) and
// max_visits (an integer ≥ 1, or null to clear it), at least one. It
// returns a non-empty user-facing detail when the body is not a single
// JSON object, a member is unknown, present twice or of the wrong type,
// or the object is empty. short_code cannot be changed: that would break
// every short URL already handed out.
func parseEditBody(body []byte) (Edit, string) {
	var out Edit
	accept := func(key string) (string, bool) {
		switch key {
		case memberURL, memberExpiresAt, memberMaxVisits:
			return "", false
		case memberShortCode:
			return "the short code of a link cannot be changed; create a new link instead", false
		}
		return unknownMember(key, "url, expires_at, max_visits"), false
	}
	n, detail := readObject(body, accept, out.set)
	if detail != "" {
		return out, detail
	}
	if n == 0 {
		return out, "nothing to change: give url, expires_at or max_visits"
	}
	return out, ""
}

// set reads one member of an edit; null clears expires_at and max_visits.
func (e *Edit) set(key string, val json.RawMessage) string {
	if string(val) == "null" {
		switch key {
		case memberURL:
			return "the member \"url\" cannot be null: a link needs a target"
		case memberExpiresAt:
			e.ExpiresAt = &time.Time{}
		case memberMaxVisits:
			e.MaxVisits = new(int64)
		}
		return ""
	}
	var b linkBody
	if detail := b.set(key, val); detail != "" {
		return detail
	}
	switch key {
	case memberURL:
		e.URL = &b.URL
	case memberExpiresAt:
		e.ExpiresAt = &b.ExpiresAt
	case memberMaxVisits:
		e.MaxVisits = &b.MaxVisits
	}
	return ""
}

// isPatchJSON accepts application/json (see isJSON) and
// application/merge-patch+json (RFC 7396), whose meaning for this object
// is the same.
func isPatchJSON(ct string) bool {
	if isJSON(ct) {
		return true
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/merge-patch+json" {
		return false
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return false
		}
	}
	return true
}

// serveEdit answers PATCH /links/{code}.
func (h *Handler) serveEdit(w http.ResponseWriter, r *http.Request, c Caller) {
	if !noQuery(w, r) {
		return
	}
	body, ok := readBody(w, r, isPatchJSON)
	if !ok {
		return
	}
	e, detail := parseEditBody(body)
	if detail != "" {
		problem.Write(w, http.StatusBadRequest, detail)
		return
	}
	l, err := h.svc.Edit(r.Context(), r.PathValue("code"), c, e)
	if err != nil {
		if ie, ok := errors.AsType[*InvalidURLError](err); ok {
			problem.Write(w, http.StatusBadRequest, "invalid url: "+ie.Reason)
			return
		}
		if ie, ok := errors.AsType[*InputError](err); ok {
			problem.Write(w, http.StatusBadRequest, "invalid "+ie.Field+": "+ie.Reason)
			return
		}
		switch {
		case errors.Is(err, ErrOverLimit):
			problem.Write(w, http.StatusConflict, "the link has already served more visits than the new max_visits; give a larger limit or null")
		default:
			h.writeLinkError(w, r, err)
		}
		return
	}
	jsondoc.Write(w, http.StatusOK, h.svc.resource(l, h.svc.now()), jsondoc.Options{RawHTML: true})
}
