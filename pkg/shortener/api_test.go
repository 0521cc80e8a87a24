package shortener_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// clock is a settable clock for the API tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// apiOptions are the options of the Service and of its Handler, for
// newAPI to change.
type apiOptions struct {
	shortener.Options
	shortener.HandlerOptions
}

// api is a Service with every feature on, identity from X-User and roles
// from X-Roles (as behind idp-proxy), "admin" as the administrators' role.
type api struct {
	t     *testing.T
	svc   *shortener.Service
	h     *shortener.Handler
	st    *spyStore
	clock *clock
}

func newAPI(t *testing.T, mod func(*apiOptions)) *api {
	t.Helper()
	c := &clock{t: time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)}
	o := apiOptions{
		Options: shortener.Options{
			BaseURL: "https://sho.rt", CustomCodes: true, Now: c.now, CacheSize: 100, VisitFlushInterval: time.Hour,
		},
		HandlerOptions: shortener.HandlerOptions{
			Owner: shortener.OwnerFromHeader("X-User"), Roles: shortener.RolesFromHeader("X-Roles"),
			AdminRoles: []string{"admin"}, Page: true,
		},
	}
	if mod != nil {
		mod(&o)
	}
	st := newSpy()
	svc := newService(t, st, o.Options)
	t.Cleanup(func() { _ = svc.Close(context.Background()) })
	return &api{t: t, svc: svc, h: newHandler(t, svc, o.HandlerOptions), st: st, clock: c}
}

// call sends a request as user (none when ""); body is JSON when not "".
func (a *api) call(method, target, user, body string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if user != "" {
		req.Header.Set("X-User", user)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, req)
	return rec
}

type linkJSON struct {
	ShortCode string     `json:"short_code"`
	ShortURL  string     `json:"short_url"`
	URL       string     `json:"url"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	MaxVisits *int64     `json:"max_visits"`
	Visits    int64      `json:"visits"`
	Status    string     `json:"status"`
}

type listJSON struct {
	Links      []linkJSON `json:"links"`
	NextCursor *string    `json:"next_cursor"`
}

func decodeJSON[T any](t testing.TB, rec *httptest.ResponseRecorder, status int) T {
	t.Helper()
	var v T
	if rec.Code != status {
		t.Fatalf("status %d, want %d: %s", rec.Code, status, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q", ct)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("body %s: %v", rec.Body, err)
	}
	return v
}

// create makes a link through POST /links as user.
func (a *api) create(user, body string) linkJSON {
	a.t.Helper()
	return decodeJSON[linkJSON](a.t, a.call("POST", "/links", user, body), http.StatusCreated)
}

func TestCustomCodes(t *testing.T) {
	tests := []struct {
		name, body string
		status     int
		detail     string
	}{
		{"ok", `{"url":"https://example.com/a","short_code":"my-Link_1"}`, 201, ""},
		{"three", `{"url":"https://example.com/a","short_code":"abc"}`, 201, ""},
		{"sixty-four", `{"url":"https://example.com/a","short_code":"` + strings.Repeat("z", 64) + `"}`, 201, ""},
		{"taken", `{"url":"https://example.com/b","short_code":"taken01"}`, 409, "already in use"},
		{"taken other case is free", `{"url":"https://example.com/a","short_code":"TAKEN01"}`, 201, ""},
		{"too short", `{"url":"https://example.com/a","short_code":"ab"}`, 400, "short_code"},
		{"empty", `{"url":"https://example.com/a","short_code":""}`, 400, "short_code"},
		{"too long", `{"url":"https://example.com/a","short_code":"` + strings.Repeat("z", 65) + `"}`, 400, "short_code"},
		{"slash", `{"url":"https://example.com/a","short_code":"a/b/c"}`, 400, "short_code"},
		{"dot", `{"url":"https://example.com/a","short_code":"a.bc"}`, 400, "short_code"},
		{"space", `{"url":"https://example.com/a","short_code":"a bc"}`, 400, "short_code"},
		{"unicode", `{"url":"https://example.com/a","short_code":"café"}`, 400, "short_code"},
		{"percent", `{"url":"https://example.com/a","short_code":"a%2Fb"}`, 400, "short_code"},
		{"reserved links", `{"url":"https://example.com/a","short_code":"links"}`, 400, "reserved"},
		{"reserved Health", `{"url":"https://example.com/a","short_code":"Health"}`, 400, "reserved"},
		{"reserved metrics", `{"url":"https://example.com/a","short_code":"METRICS"}`, 400, "reserved"},
		{"reserved assets", `{"url":"https://example.com/a","short_code":"assets"}`, 400, "reserved"},
		{"reserved shorten", `{"url":"https://example.com/a","short_code":"shorten"}`, 400, "reserved"},
		{"reserved openapi", `{"url":"https://example.com/a","short_code":"openapi"}`, 400, "reserved"},
		{"reserved auth", `{"url":"https://example.com/a","short_code":"auth"}`, 400, "reserved"},
		{"number", `{"url":"https://example.com/a","short_code":123}`, 400, "short_code"},
	}
	for _, path := range []string{"/shorten", "/links"} {
		t.Run(path, func(t *testing.T) {
			a := newAPI(t, nil)
			if rec := a.call("POST", path, "alice", `{"url":"https://example.com/t","short_code":"taken01"}`); rec.Code != 201 {
				t.Fatalf("setup: %d %s", rec.Code, rec.Body)
			}
			for _, tc := range tests {
				rec := a.call("POST", path, "alice", tc.body)
				if tc.status != 201 {
					d := checkProblem(t, rec, tc.status)
					if !strings.Contains(d.Detail, tc.detail) {
						t.Errorf("%s: detail %q does not mention %q", tc.name, d.Detail, tc.detail)
					}
					continue
				}
				c := decodeJSON[linkJSON](t, rec, 201)
				var in struct {
					Code string `json:"short_code"`
				}
				_ = json.Unmarshal([]byte(tc.body), &in)
				if c.ShortCode != in.Code || c.ShortURL != "https://sho.rt/"+in.Code {
					t.Fatalf("%s: answer %+v", tc.name, c)
				}
				if rec := a.call("GET", "/"+in.Code, "", ""); rec.Code != 302 || rec.Header().Get("Location") != "https://example.com/a" {
					t.Fatalf("%s: redirect %d %q", tc.name, rec.Code, rec.Header().Get("Location"))
				}
				if err := a.svc.Delete(t.Context(), in.Code, shortener.Caller{ID: "alice"}); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestCustomCodesOff(t *testing.T) {
	a := newAPI(t, func(o *apiOptions) { o.CustomCodes = false })
	d := checkProblem(t, a.call("POST", "/shorten", "alice", `{"url":"https://example.com/","short_code":"mine123"}`), 400)
	if !strings.Contains(d.Detail, "not enabled") {
		t.Fatalf("detail %q", d.Detail)
	}
	if a.st.Len() != 0 {
		t.Fatal("link stored")
	}
}

// TestShortenAnswer: POST /shorten answers the specification's three
// members, plus expires_at and max_visits when they were given.
func TestShortenAnswer(t *testing.T) {
	a := newAPI(t, nil)
	rec := a.call("POST", "/shorten", "", `{"url":"https://example.com/"}`)
	var plain map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &plain); err != nil || rec.Code != 201 || len(plain) != 3 {
		t.Fatalf("plain answer %d %s", rec.Code, rec.Body)
	}
	rec = a.call("POST", "/shorten", "", `{"url":"https://example.com/","expires_at":"2030-01-02T00:00:00.5+02:00","max_visits":7,"short_code":null}`)
	var full map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &full); err != nil || rec.Code != 201 {
		t.Fatalf("answer %d %s", rec.Code, rec.Body)
	}
	if full["expires_at"] != "2030-01-01T22:00:00.5Z" || full["max_visits"] != float64(7) || len(full) != 5 {
		t.Fatalf("answer %v", full)
	}
}

func TestInputRules(t *testing.T) {
	tests := []struct {
		name, path, body, detail string
	}{
		{"links unknown member", "/links", `{"url":"https://example.com/","title":"x"}`, `unknown member "title"`},
		{"links camelCase", "/links", `{"url":"https://example.com/","shortCode":"abcd"}`, `did you mean "short_code"`},
		{"shorten camelCase", "/shorten", `{"url":"https://example.com/","shortCode":"abcd"}`, `did you mean "short_code"`},
		{"shorten Shlink slug", "/shorten", `{"url":"https://example.com/","customSlug":"abcd"}`, `"customSlug"`},
		{"shorten YOURLS keyword", "/shorten", `{"url":"https://example.com/","keyword":"abcd"}`, `"keyword"`},
		{"shorten Kutt expire_in", "/shorten", `{"url":"https://example.com/","expire_in":"2 hours"}`, `did you mean "expires_at"`},
		{"shorten maxVisits", "/shorten", `{"url":"https://example.com/","maxVisits":3}`, `did you mean "max_visits"`},
		{"expiry in the past", "/links", `{"url":"https://example.com/","expires_at":"2029-12-31T23:59:59Z"}`, "future"},
		{"expiry now", "/links", `{"url":"https://example.com/","expires_at":"2030-01-01T12:00:00Z"}`, "future"},
		{"expiry without zone", "/links", `{"url":"https://example.com/","expires_at":"2031-01-01T12:00:00"}`, "RFC 3339"},
		{"expiry date only", "/links", `{"url":"https://example.com/","expires_at":"2031-01-01"}`, "RFC 3339"},
		{"expiry number", "/links", `{"url":"https://example.com/","expires_at":1900000000}`, "expires_at"},
		{"max zero", "/links", `{"url":"https://example.com/","max_visits":0}`, "max_visits"},
		{"max negative", "/links", `{"url":"https://example.com/","max_visits":-1}`, "max_visits"},
		{"max fraction", "/links", `{"url":"https://example.com/","max_visits":1.5}`, "max_visits"},
		{"max exponent", "/links", `{"url":"https://example.com/","max_visits":1e3}`, "max_visits"},
		{"max string", "/links", `{"url":"https://example.com/","max_visits":"3"}`, "max_visits"},
		{"max huge", "/links", `{"url":"https://example.com/","max_visits":9007199254740992}`, "max_visits"},
		{"duplicate max", "/links", `{"url":"https://example.com/","max_visits":1,"max_visits":2}`, "more than once"},
		{"duplicate code", "/shorten", `{"url":"https://example.com/","short_code":"abcd","short_code":"efgh"}`, "more than once"},
		{"missing url", "/links", `{"short_code":"abcd"}`, `"url" is required`},
		{"links query", "/links?x=1", `{"url":"https://example.com/"}`, `unknown query parameter "x"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAPI(t, nil)
			d := checkProblem(t, a.call("POST", tc.path, "alice", tc.body), 400)
			if !strings.Contains(d.Detail, tc.detail) {
				t.Fatalf("detail %q does not contain %q", d.Detail, tc.detail)
			}
			if a.st.creates.Load() != 0 {
				t.Fatal("store touched")
			}
		})
	}
}

func TestLinksNeedIdentity(t *testing.T) {
	for _, name := range []string{"identity headers absent", "no Owner hook"} {
		a := newAPI(t, func(o *apiOptions) {
			if name == "no Owner hook" {
				o.Owner = nil
			}
		})
		for _, rt := range [][2]string{{"GET", "/links"}, {"POST", "/links"}, {"GET", "/links/abcdefg"}, {"DELETE", "/links/abcdefg"}, {"GET", "/links/abcdefg/qr"}} {
			body := ""
			if rt[0] == "POST" {
				body = `{"url":"https://example.com/"}`
			}
			rec := a.call(rt[0], rt[1], "", body, "X-User", "")
			checkProblem(t, rec, 401)
			if rec.Header().Get("WWW-Authenticate") == "" {
				t.Errorf("%s %v: no WWW-Authenticate", name, rt)
			}
		}
	}
}

func TestLinkPathsAndMethods(t *testing.T) {
	a := newAPI(t, nil)
	tests := []struct {
		method, path string
		status       int
		allow        string
	}{
		{"PUT", "/links", 405, "GET, HEAD, POST"},
		{"PUT", "/links/abcdefg", 405, "GET, HEAD, PATCH, DELETE"},
		{"POST", "/links/abcdefg/qr", 405, "GET, HEAD"},
		{"DELETE", "/links/abcdefg/qr", 405, "GET, HEAD"},
		{"GET", "/links/", 404, ""},
		{"GET", "/links/abcdefg/other", 404, ""},
		{"GET", "/links/abcdefg/qr/x", 404, ""},
		{"GET", "/links/abcdefg/", 404, ""},
		{"GET", "/links/a.b.c", 404, ""},
		{"GET", "/links/" + strings.Repeat("a", 65), 404, ""},
		{"PUT", "/openapi.json", 405, "GET, HEAD"},
	}
	for _, tc := range tests {
		rec := a.call(tc.method, tc.path, "alice", "")
		checkProblem(t, rec, tc.status)
		if rec.Header().Get("Allow") != tc.allow {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, rec.Header().Get("Allow"), tc.allow)
		}
	}
}

// A browser's cross-site request cannot delete or create: the session
// cookie it carries is no proof of intent.
func TestCrossOriginRefused(t *testing.T) {
	a := newAPI(t, nil)
	l := a.create("alice", `{"url":"https://example.com/"}`)
	rec := a.call("DELETE", "/links/"+l.ShortCode, "alice", "", "Sec-Fetch-Site", "cross-site")
	if rec.Code != http.StatusForbidden {
		t.Fatalf("cross-site DELETE: %d", rec.Code)
	}
	rec = a.call("POST", "/links", "alice", `{"url":"https://example.com/"}`, "Sec-Fetch-Site", "cross-site")
	if rec.Code != http.StatusForbidden {
		t.Fatalf("cross-site POST: %d", rec.Code)
	}
	if rec := a.call("DELETE", "/links/"+l.ShortCode, "alice", "", "Sec-Fetch-Site", "same-origin"); rec.Code != 204 {
		t.Fatalf("same-origin DELETE: %d", rec.Code)
	}
}

func TestConcurrentLimitedRedirects(t *testing.T) {
	a := newAPI(t, nil)
	l := a.create("alice", `{"url":"https://example.com/","max_visits":20}`)
	var (
		wg         sync.WaitGroup
		mu         sync.Mutex
		ok, gone   int
		unexpected []int
	)
	for range 16 {
		wg.Go(func() {
			for range 5 {
				rec := a.call("GET", "/"+l.ShortCode, "", "")
				mu.Lock()
				switch rec.Code {
				case 302:
					ok++
				case 410:
					gone++
				default:
					unexpected = append(unexpected, rec.Code)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if ok != 20 || gone != 60 || len(unexpected) > 0 {
		t.Fatalf("%d redirects, %d gone, unexpected %v", ok, gone, unexpected)
	}
}
