package jsondoc

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

func TestWrite(t *testing.T) {
	v := map[string]any{"url": "https://x.test/?a=1&b=<2>", "n": 1}
	for _, tc := range []struct {
		name   string
		o      Options
		body   string
		header map[string]string
	}{
		{"default", Options{}, `{"n":1,"url":"https://x.test/?a=1\u0026b=\u003c2\u003e"}` + "\n",
			map[string]string{"Pragma": "", "X-Content-Type-Options": "", "Location": ""}},
		{"raw", Options{RawHTML: true, Location: "https://x.test/l"}, `{"n":1,"url":"https://x.test/?a=1&b=<2>"}` + "\n",
			map[string]string{"Location": "https://x.test/l"}},
		{"credentials", Options{Credentials: true}, `{"n":1,"url":"https://x.test/?a=1\u0026b=\u003c2\u003e"}` + "\n",
			map[string]string{"Pragma": "no-cache", "X-Content-Type-Options": "nosniff"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			Write(rec, http.StatusCreated, v, tc.o)
			if rec.Code != http.StatusCreated || rec.Body.String() != tc.body {
				t.Fatalf("%d %q, want 201 %q", rec.Code, rec.Body, tc.body)
			}
			want := map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"}
			for k, v := range tc.header {
				want[k] = v
			}
			for k, v := range want {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			if got := rec.Header().Get("Content-Length"); got != strconv.Itoa(len(tc.body)) {
				t.Errorf("Content-Length %q, want %d", got, len(tc.body))
			}
		})
	}
	rec := httptest.NewRecorder()
	Write(rec, http.StatusOK, func() {}, Options{})
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("an unencodable value: %d, want 500", rec.Code)
	}
}
