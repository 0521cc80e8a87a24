// Package problem writes RFC 9457 "problem details" error responses
// (application/problem+json). Every error answer of the project goes through
// it so that clients see one shape everywhere.
package problem

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// ContentType is the media type of a problem document.
const ContentType = "application/problem+json"

// Details is an RFC 9457 problem document. Type defaults to "about:blank" and
// Title to the status text, as the RFC recommends.
type Details struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
	// Clause is an extension member of 403 answers: the name of the
	// rule's clause that refused the request ("roles", "claims:tid").
	Clause string `json:"clause,omitempty"`
}

// Write answers with status and a short, non-leaking detail. It must be
// called before anything else is written to w.
func Write(w http.ResponseWriter, status int, detail string) {
	WriteDetails(w, Details{Status: status, Detail: detail})
}

// WriteDetails answers with the problem document d; zero fields get their
// defaults.
func WriteDetails(w http.ResponseWriter, d Details) {
	if d.Status == 0 {
		d.Status = http.StatusInternalServerError
	}
	if d.Type == "" {
		d.Type = "about:blank"
	}
	if d.Title == "" {
		d.Title = http.StatusText(d.Status)
	}
	body, err := json.Marshal(d)
	if err != nil { // cannot happen: every field is a string or an int
		body = []byte(`{"type":"about:blank","status":500}`)
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", ContentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(d.Status)
	_, _ = w.Write(body)
}
