package shortener_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/problem"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

func TestEditLink(t *testing.T) {
	a := newAPI(t, nil)
	l := a.create("alice", `{"url":"https://example.com/old","expires_at":"2030-06-01T00:00:00Z"}`)
	path := "/links/" + l.ShortCode
	// Redirect once: the link is now in the redirect cache.
	if rec := a.call("GET", "/"+l.ShortCode, "", ""); rec.Code != 302 || rec.Header().Get("Location") != "https://example.com/old" {
		t.Fatalf("redirect before the edit: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	got := decodeJSON[linkJSON](t, a.call("PATCH", path, "alice", `{"url":"https://example.com/new"}`), 200)
	if got.URL != "https://example.com/new" || got.ExpiresAt == nil || !got.ExpiresAt.Equal(time.Date(2030, 6, 1, 0, 0, 0, 0, time.UTC)) || got.MaxVisits != nil {
		t.Fatalf("after editing the url: %+v", got)
	}
	// This replica serves the new URL at once, whatever its cache held.
	if rec := a.call("GET", "/"+l.ShortCode, "", ""); rec.Header().Get("Location") != "https://example.com/new" {
		t.Fatalf("redirect after the edit: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	// null clears, a number sets; the merge-patch media type is accepted.
	rec := a.call("PATCH", path, "alice", `{"expires_at":null,"max_visits":3}`, "Content-Type", "application/merge-patch+json")
	got = decodeJSON[linkJSON](t, rec, 200)
	if got.ExpiresAt != nil || got.MaxVisits == nil || *got.MaxVisits != 3 || got.Visits != 2 {
		t.Fatalf("after clearing expiry and setting a limit: %+v", got)
	}
	// The visits counted in memory before the limit count toward it.
	if rec := a.call("GET", "/"+l.ShortCode, "", ""); rec.Code != 302 {
		t.Fatalf("third visit: %d", rec.Code)
	}
	if rec := a.call("GET", "/"+l.ShortCode, "", ""); rec.Code != 410 {
		t.Fatalf("fourth visit of a link limited to 3: %d", rec.Code)
	}
	// A limit below the visits is refused and changes nothing.
	checkProblem(t, a.call("PATCH", path, "alice", `{"url":"https://example.com/x","max_visits":2}`), 409)
	got = decodeJSON[linkJSON](t, a.call("GET", path, "alice", ""), 200)
	if got.URL != "https://example.com/new" || *got.MaxVisits != 3 || got.Status != "exhausted" {
		t.Fatalf("after a refused edit: %+v", got)
	}
	// Raising it revives the link; clearing it makes it unlimited.
	decodeJSON[linkJSON](t, a.call("PATCH", path, "alice", `{"max_visits":4}`), 200)
	if rec := a.call("GET", "/"+l.ShortCode, "", ""); rec.Code != 302 {
		t.Fatalf("visit after raising the limit: %d", rec.Code)
	}
	got = decodeJSON[linkJSON](t, a.call("PATCH", path, "alice", `{"max_visits":null}`), 200)
	if got.MaxVisits != nil || got.Status != "active" || got.Visits != 4 {
		t.Fatalf("after clearing the limit: %+v", got)
	}
	// Someone else: 404; an administrator: allowed; nobody: 401.
	checkProblem(t, a.call("PATCH", path, "bob", `{"url":"https://evil.example/"}`), 404)
	decodeJSON[linkJSON](t, a.call("PATCH", path, "root", `{"url":"https://example.com/admin"}`, "X-Roles", "admin"), 200)
	checkProblem(t, a.call("PATCH", path, "", `{"url":"https://evil.example/"}`), 401)
	checkProblem(t, a.call("PATCH", "/links/zzzzzzz", "alice", `{"url":"https://example.com/"}`), 404)
}

func TestEditBadInput(t *testing.T) {
	a := newAPI(t, nil)
	l := a.create("alice", `{"url":"https://example.com/"}`)
	path := "/links/" + l.ShortCode
	tests := []struct {
		name, body, ct string
		status         int
		detail         string
	}{
		{"empty object", `{}`, "", 400, "nothing to change"},
		{"not an object", `[]`, "", 400, "JSON object"},
		{"short_code", `{"short_code":"other"}`, "", 400, "cannot be changed"},
		{"url null", `{"url":null}`, "", 400, "cannot be null"},
		{"url invalid", `{"url":"ftp://example.com/"}`, "", 400, "invalid url"},
		{"url number", `{"url":1}`, "", 400, "must be a string"},
		{"expires past", `{"expires_at":"2020-01-01T00:00:00Z"}`, "", 400, "in the future"},
		{"expires no zone", `{"expires_at":"2031-01-01T00:00:00"}`, "", 400, "RFC 3339"},
		{"max zero", `{"max_visits":0}`, "", 400, "max_visits"},
		{"max huge", `{"max_visits":9007199254740992}`, "", 400, "max_visits"},
		{"max float", `{"max_visits":1.5}`, "", 400, "max_visits"},
		{"unknown", `{"target":"https://example.com/"}`, "", 400, "did you mean \"url\""},
		{"duplicate", `{"url":"https://example.com/a","url":"https://example.com/b"}`, "", 400, "more than once"},
		{"trailing", `{"url":"https://example.com/a"}{}`, "", 400, "single JSON object"},
		{"text/plain", `{"url":"https://example.com/a"}`, "text/plain", 415, "Content-Type"},
		{"big", `{"url":"https://example.com/` + strings.Repeat("a", 17<<10) + `"}`, "", 413, "16 KiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.ct != "" {
				hdr = []string{"Content-Type", tc.ct}
			}
			p := checkProblem(t, a.call("PATCH", path, "alice", tc.body, hdr...), tc.status)
			if !strings.Contains(p.Detail, tc.detail) {
				t.Fatalf("detail %q, want it to contain %q", p.Detail, tc.detail)
			}
		})
	}
	checkProblem(t, a.call("PATCH", path+"?x=1", "alice", `{"url":"https://example.com/"}`), 400)
	got := decodeJSON[linkJSON](t, a.call("GET", path, "alice", ""), 200)
	if got.URL != "https://example.com/" {
		t.Fatalf("refused edits changed the link: %+v", got)
	}
}

// The redirect cache serves an edit made on another replica within
// CacheTTL, and not before the entry was read.
func TestEditOtherReplicaWithinCacheTTL(t *testing.T) {
	c := &clock{t: time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)}
	st := newSpy()
	o := shortener.Options{Now: c.now, CacheSize: 100, CacheTTL: 5 * time.Second, VisitFlushInterval: time.Hour}
	one, two := newService(t, st, o), newService(t, st, o)
	l, err := one.Create(t.Context(), shortener.NewLink{URL: "https://example.com/old", Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := two.Visit(t.Context(), l.Code, shortener.Visitor{}); got.URL != "https://example.com/old" {
		t.Fatalf("first visit: %q", got.URL)
	}
	newURL := "https://example.com/new"
	if _, err := one.Edit(t.Context(), l.Code, shortener.Caller{ID: "alice"}, shortener.Edit{URL: &newURL}); err != nil {
		t.Fatal(err)
	}
	c.add(4 * time.Second)
	if got, _ := two.Visit(t.Context(), l.Code, shortener.Visitor{}); got.URL != "https://example.com/old" {
		t.Fatalf("within the TTL the cached entry is served: %q", got.URL)
	}
	c.add(time.Second)
	if got, _ := two.Visit(t.Context(), l.Code, shortener.Visitor{}); got.URL != newURL {
		t.Fatalf("after the TTL: %q, want %q", got.URL, newURL)
	}
}

// FuzzEditBody: any body on PATCH /links/{code} is a 200 or a 4xx
// problem+json; never a 5xx or a panic.
func FuzzEditBody(f *testing.F) {
	for _, seed := range []string{
		`{"url":"https://example.com/"}`,
		`{"url":"https://example.com/","expires_at":"2031-01-01T00:00:00Z","max_visits":3}`,
		`{"expires_at":null,"max_visits":null}`,
		`{"max_visits":1e400}`,
		`{"url":null}`,
		`{"short_code":"x"}`,
		`{}`,
	} {
		f.Add(seed)
	}
	a := &api{}
	var path string
	f.Fuzz(func(t *testing.T, body string) {
		if a.svc == nil {
			a = newAPI(t, nil)
			path = "/links/" + a.create("alice", `{"url":"https://example.com/"}`).ShortCode
		}
		a.t = t
		rec := a.call("PATCH", path, "alice", body)
		switch {
		case rec.Code == http.StatusOK:
		case rec.Code >= 400 && rec.Code < 500:
			if rec.Header().Get("Content-Type") != problem.ContentType {
				t.Fatalf("%d without problem+json", rec.Code)
			}
		default:
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
	})
}
