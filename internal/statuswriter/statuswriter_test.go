package statuswriter

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestWriter(t *testing.T) {
	for _, tt := range []struct {
		name       string
		handler    func(w http.ResponseWriter)
		status     int
		bytes      int64
		recorderSt int
	}{
		{"nothing written", func(http.ResponseWriter) {}, 0, 0, 200},
		{"implicit 200", func(w http.ResponseWriter) { w.Write([]byte("hello")) }, 200, 5, 200},
		{"explicit 404", func(w http.ResponseWriter) { w.WriteHeader(404); w.Write([]byte("no")) }, 404, 2, 404},
		{"1xx not recorded", func(w http.ResponseWriter) { w.WriteHeader(103); w.WriteHeader(201) }, 201, 0, -1},
		{"first final status wins", func(w http.ResponseWriter) { w.WriteHeader(302); w.WriteHeader(500) }, 302, 0, 302},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			w := &Writer{ResponseWriter: rec}
			tt.handler(w)
			if w.Status != tt.status || w.Bytes != tt.bytes || (tt.recorderSt > 0 && rec.Code != tt.recorderSt) {
				t.Fatalf("Status=%d Bytes=%d recorder=%d, want %d %d %d", w.Status, w.Bytes, rec.Code, tt.status, tt.bytes, tt.recorderSt)
			}
			if http.NewResponseController(w).Flush() != nil {
				t.Fatal("Flush does not reach the underlying writer")
			}
		})
	}
}
