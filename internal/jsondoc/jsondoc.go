// Package jsondoc writes a JSON answer (a document that is not a problem:
// those are internal/problem's), the one way for the proxy, the library,
// its test provider and the shortener.
package jsondoc

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/idp-proxy/idp-proxy/internal/problem"
)

// Options of Write. The zero value escapes <, > and & in strings (as
// json.Marshal does) and sets Content-Type application/json,
// Content-Length and Cache-Control no-store only.
type Options struct {
	// RawHTML keeps <, > and & as they are, so that URLs stay readable.
	RawHTML bool
	// Credentials marks a body that carries tokens: it adds
	// Pragma no-cache (for HTTP/1.0 caches) and X-Content-Type-Options
	// nosniff.
	Credentials bool
	// Location, when not empty, is the Location header.
	Location string
}

// Write answers status with v encoded as JSON and a final newline. A
// value that cannot be encoded (never one of the documents this module
// writes) is answered 500 problem+json.
func Write(w http.ResponseWriter, status int, v any, o Options) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(!o.RawHTML)
	if err := enc.Encode(v); err != nil {
		problem.Write(w, http.StatusInternalServerError, "internal error")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	h.Set("Cache-Control", "no-store")
	if o.Credentials {
		h.Set("Pragma", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
	}
	if o.Location != "" {
		h.Set("Location", o.Location)
	}
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
