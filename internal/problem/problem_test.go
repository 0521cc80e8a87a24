package problem

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestWrite(t *testing.T) {
	rec := httptest.NewRecorder()
	Write(rec, http.StatusNotFound, "short code not found")
	if rec.Code != http.StatusNotFound {
		t.Fatalf("status = %d", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); ct != ContentType {
		t.Fatalf("content type = %q", ct)
	}
	var d Details
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	want := Details{Type: "about:blank", Title: "Not Found", Status: 404, Detail: "short code not found"}
	if d != want {
		t.Fatalf("got %+v, want %+v", d, want)
	}
}

func TestWriteDetailsDefaults(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteDetails(rec, Details{})
	if rec.Code != 500 {
		t.Fatalf("status = %d", rec.Code)
	}
	var d Details
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if d.Title != "Internal Server Error" || d.Type != "about:blank" {
		t.Fatalf("defaults not applied: %+v", d)
	}
}
