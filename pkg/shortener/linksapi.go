package shortener

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/jsondoc"
	"github.com/idp-proxy/idp-proxy/internal/problem"
)

// DefaultListLimit is the page size of GET /links without limit.
const DefaultListLimit = 50

// linkResource is a link as the /links API shows it.
type linkResource struct {
	ShortCode string     `json:"short_code"`
	ShortURL  string     `json:"short_url"`
	URL       string     `json:"url"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	MaxVisits *int64     `json:"max_visits"`
	Visits    int64      `json:"visits"`
	// Status is "active", "expired" or "exhausted".
	Status string `json:"status"`
}

type linkList struct {
	Links      []linkResource `json:"links"`
	NextCursor *string        `json:"next_cursor"`
	User       listUser       `json:"user"`
}

// listUser is the caller of GET /links, for the page's "Signed in as".
type listUser struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Admin bool   `json:"admin"`
}

func (s *Service) resource(l Link, now time.Time) linkResource {
	res := linkResource{
		ShortCode: l.Code, ShortURL: s.ShortURL(l.Code), URL: l.URL,
		CreatedAt: l.CreatedAt, Visits: l.Visits, Status: "active",
	}
	if !l.ExpiresAt.IsZero() {
		t := l.ExpiresAt
		res.ExpiresAt = &t
	}
	if l.MaxVisits > 0 {
		n := l.MaxVisits
		res.MaxVisits = &n
	}
	switch {
	case l.ExpiredAt(now):
		res.Status = "expired"
	case l.Exhausted():
		res.Status = "exhausted"
	}
	return res
}

// writeNoIdentity answers 401: the /links routes need an identity.
func writeNoIdentity(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="shortener"`)
	problem.Write(w, http.StatusUnauthorized, "sign in to see and manage your links")
}

// withCaller serves a /links route (its method checked by the route
// table) to a caller with an identity, and answers 401 to one without.
func (h *Handler) withCaller(serve func(http.ResponseWriter, *http.Request, Caller)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c := h.CallerOf(r)
		if c.ID == "" {
			writeNoIdentity(w)
			return
		}
		serve(w, r, c)
	}
}

// serveLink answers GET /links/{code}.
func (h *Handler) serveLink(w http.ResponseWriter, r *http.Request, c Caller) {
	if !noQuery(w, r) {
		return
	}
	l, err := h.svc.LinkFor(r.Context(), r.PathValue("code"), c)
	if err != nil {
		h.writeLinkError(w, r, err)
		return
	}
	jsondoc.Write(w, http.StatusOK, h.svc.resource(l, h.svc.now()), jsondoc.Options{RawHTML: true})
}

// writeLinkError answers the error of a /links/{code} operation.
func (h *Handler) writeLinkError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, ErrNotFound):
		problem.Write(w, http.StatusNotFound, "you have no link with this short code")
	case errors.Is(err, ErrNoIdentity):
		writeNoIdentity(w)
	default:
		h.svc.log.Log(r.Context(), storeErrorLevel(err), "shortener: links API", "err", err)
		writeStoreUnavailable(w)
	}
}

// noQuery refuses a query string on routes that take none.
func noQuery(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.RawQuery == "" {
		return true
	}
	q, err := queryOf(r)
	if err != nil {
		problem.Write(w, http.StatusBadRequest, "the query string cannot be parsed")
		return false
	}
	for k := range q {
		problem.Write(w, http.StatusBadRequest, "unknown query parameter "+strconv.Quote(truncate(k, 64)))
		return false
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// queryOf parses the query strictly (url.Values of r.URL.Query drops
// malformed pairs silently).
func queryOf(r *http.Request) (url.Values, error) {
	return url.ParseQuery(r.URL.RawQuery)
}

// serveCreateLink answers POST /links.
func (h *Handler) serveCreateLink(w http.ResponseWriter, r *http.Request, c Caller) {
	if !noQuery(w, r) {
		return
	}
	body, ok := readJSONBody(w, r)
	if !ok {
		return
	}
	in, detail := parseLinkBody(body, true)
	if detail != "" {
		problem.Write(w, http.StatusBadRequest, detail)
		return
	}
	l, ok := h.create(w, r, in, c.ID)
	if !ok {
		return
	}
	jsondoc.Write(w, http.StatusCreated, h.svc.resource(l, h.svc.now()), jsondoc.Options{RawHTML: true, Location: h.svc.baseURL + "/links/" + l.Code})
}

// serveList answers GET /links.
func (h *Handler) serveList(w http.ResponseWriter, r *http.Request, c Caller) {
	q, err := queryOf(r)
	if err != nil {
		problem.Write(w, http.StatusBadRequest, "the query string cannot be parsed")
		return
	}
	limit := DefaultListLimit
	var after Cursor
	for k, vs := range q {
		if len(vs) != 1 {
			problem.Write(w, http.StatusBadRequest, "the query parameter "+strconv.Quote(truncate(k, 64))+" appears more than once")
			return
		}
		switch k {
		case "limit":
			n, err := strconv.Atoi(vs[0])
			if err != nil || n < 1 || n > MaxListLimit {
				problem.Write(w, http.StatusBadRequest, "invalid limit: must be an integer from 1 to 1000")
				return
			}
			limit = n
		case "cursor":
			if after, err = decodeCursor(vs[0]); err != nil {
				problem.Write(w, http.StatusBadRequest, "invalid cursor: pass next_cursor of the previous page unchanged")
				return
			}
		default:
			problem.Write(w, http.StatusBadRequest, "unknown query parameter "+strconv.Quote(truncate(k, 64))+"; known: limit, cursor")
			return
		}
	}
	links, next, err := h.svc.List(r.Context(), c.ID, after, limit)
	if err != nil {
		h.writeLinkError(w, r, err)
		return
	}
	out := linkList{Links: make([]linkResource, len(links)), User: listUser{ID: c.ID, Name: c.ID, Admin: c.Admin}}
	if h.displayName != nil {
		if name := h.displayName(r); name != "" {
			out.User.Name = name
		}
	}
	now := h.svc.now()
	for i, l := range links {
		out.Links[i] = h.svc.resource(l, now)
	}
	if !next.IsZero() {
		cur := encodeCursor(next)
		out.NextCursor = &cur
	}
	jsondoc.Write(w, http.StatusOK, out, jsondoc.Options{RawHTML: true})
}

// serveDelete answers DELETE /links/{code}.
func (h *Handler) serveDelete(w http.ResponseWriter, r *http.Request, c Caller) {
	if !noQuery(w, r) {
		return
	}
	if err := h.svc.Delete(r.Context(), r.PathValue("code"), c); err != nil {
		h.writeLinkError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// cursorVersion is the first byte of an encoded cursor.
const cursorVersion = 1

// encodeCursor makes the opaque next_cursor: version, created_at in Unix
// microseconds, code; base64url without padding.
func encodeCursor(c Cursor) string {
	b := make([]byte, 0, 9+len(c.Code))
	b = append(b, cursorVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(c.CreatedAt.UnixMicro()))
	b = append(b, c.Code...)
	return base64.RawURLEncoding.EncodeToString(b)
}

var errBadCursor = errors.New("shortener: malformed cursor")

// decodeCursor parses what encodeCursor made.
func decodeCursor(s string) (Cursor, error) {
	if len(s) > 128 {
		return Cursor{}, errBadCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 10 || b[0] != cursorVersion {
		return Cursor{}, errBadCursor
	}
	code := string(b[9:])
	if len(code) > MaxCustomCodeLength || !isCustomAlphabet(code) {
		return Cursor{}, errBadCursor
	}
	us := int64(binary.BigEndian.Uint64(b[1:9]))
	return Cursor{CreatedAt: time.UnixMicro(us).UTC(), Code: code}, nil
}
