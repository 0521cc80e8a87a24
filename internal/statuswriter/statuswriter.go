// Package statuswriter records the status and size of an HTTP response for
// access logs and metrics.
package statuswriter

import "net/http"

// Writer wraps an http.ResponseWriter and records the final status code
// (informational 1xx answers are passed on but not recorded) and the number
// of body bytes written. Status is 0 until the handler writes anything.
type Writer struct {
	http.ResponseWriter
	Status int
	Bytes  int64
}

// WriteHeader records the first final status code and passes code on.
func (w *Writer) WriteHeader(code int) {
	if w.Status == 0 && code >= 200 {
		w.Status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write records an implicit 200 and counts the bytes written.
func (w *Writer) Write(b []byte) (int, error) {
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.Bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController (flushes, WebSocket hijacking) reach
// the underlying writer.
func (w *Writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }
