package shortener_test

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/internal/problem"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// FuzzLinkBody: any body on POST /links and POST /shorten is a 201 or a
// 4xx problem+json; never a 5xx or a panic.
func FuzzLinkBody(f *testing.F) {
	for _, seed := range []string{
		`{"url":"https://example.com/"}`,
		`{"url":"https://example.com/","short_code":"my-code","expires_at":"2031-01-01T00:00:00Z","max_visits":3}`,
		`{"url":"https://example.com/","shortCode":"x"}`,
		`{"url":"https://example.com/","max_visits":1e400}`,
		`{"url":"https://example.com/","expires_at":"9999-12-31T23:59:59.999999999+14:00"}`,
		`{"url":"https://example.com/","short_code":null,"expires_at":null,"max_visits":null}`,
	} {
		f.Add(seed, false)
	}
	a := &api{}
	f.Fuzz(func(t *testing.T, body string, strict bool) {
		if a.svc == nil {
			a = newAPI(t, nil)
		}
		a.t = t
		path := "/shorten"
		if strict {
			path = "/links"
		}
		rec := a.call("POST", path, "alice", body)
		switch {
		case rec.Code == 201:
		case rec.Code >= 400 && rec.Code < 500:
			if rec.Header().Get("Content-Type") != problem.ContentType {
				t.Fatalf("%d without problem+json", rec.Code)
			}
		default:
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
	})
}

// FuzzListQuery: any query string of GET /links is a 200 or a 400.
func FuzzListQuery(f *testing.F) {
	for _, seed := range []string{"limit=10", "cursor=AQAAAYxE2pJAYWJjZGVmZw", "limit=5&cursor=%00", "cursor=AQ", "x=1", "limit=-1"} {
		f.Add(seed)
	}
	a := &api{}
	f.Fuzz(func(t *testing.T, q string) {
		if a.svc == nil {
			a = newAPI(t, nil)
			a.create("alice", `{"url":"https://example.com/"}`)
		}
		// Built by hand: the server hands over whatever raw query the
		// request line had.
		req := httptest.NewRequest("GET", "/links", nil)
		req.URL = &url.URL{Path: "/links", RawQuery: q}
		req.Header.Set("X-User", "alice")
		rec := httptest.NewRecorder()
		a.h.ServeHTTP(rec, req)
		if rec.Code != 200 && rec.Code != 400 {
			t.Fatalf("GET /links?%q: %d %s", q, rec.Code, rec.Body)
		}
	})
}

// FuzzCustomCode: a code that creation accepts is one that redirects look
// up, and never a reserved path.
func FuzzCustomCode(f *testing.F) {
	for _, seed := range []string{"my-code", "abc", "LINKS", "openapi.json", "a/b", "ab", "x_y-z"} {
		f.Add(seed)
	}
	svc, err := shortener.New(newSpy(), shortener.Options{CustomCodes: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, code string) {
		if shortener.ValidateCustomCode(code) != nil {
			return
		}
		if !svc.ValidCode(code) {
			t.Fatalf("%q accepted for creation but not looked up", code)
		}
		for _, w := range shortener.DefaultReserved {
			if strings.EqualFold(w, code) {
				t.Fatalf("reserved word %q accepted", code)
			}
		}
	})
}
