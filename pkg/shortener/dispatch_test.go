package shortener

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// The shortcut for one-segment paths answers exactly as the mux it
// skips: same status, headers and body, same recorded pattern.
func TestOneSegmentShortcutMatchesMux(t *testing.T) {
	st := &fakeStore{links: map[string]Link{"Abc1234": {Code: "Abc1234", URL: "https://example.com/"}}}
	s, err := New(st, Options{CustomCodes: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHandler(s, HandlerOptions{Page: true})
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{"/Abc1234", "/Zz9Yy8X", "/shorten", "/health", "/openapi.json", "/links", "/HEALTH",
		"/metrics", "/a", "/abc%2Fdefg", "/%41bc1234", "/abc%00efg", "/abcdéfg", "/Abc1234?x=1", "/{code}", "/{$}"}
	for _, method := range []string{"GET", "HEAD", "POST", "DELETE", "OPTIONS"} {
		for _, path := range paths {
			serve := func(via func(http.ResponseWriter, *http.Request)) (*httptest.ResponseRecorder, string) {
				r := httptest.NewRequest(method, path, nil)
				rec := httptest.NewRecorder()
				via(rec, r)
				return rec, r.Pattern
			}
			got, gotPattern := serve(h.dispatch.serve)
			want, wantPattern := serve(h.dispatch.mux.ServeHTTP)
			if got.Code != want.Code || got.Body.String() != want.Body.String() || gotPattern != wantPattern ||
				got.Header().Get("Location") != want.Header().Get("Location") || got.Header().Get("Allow") != want.Header().Get("Allow") {
				t.Errorf("%s %s: shortcut %d %q %q, mux %d %q %q", method, path,
					got.Code, gotPattern, got.Body, want.Code, wantPattern, want.Body)
			}
		}
	}
}
