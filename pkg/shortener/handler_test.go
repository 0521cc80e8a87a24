package shortener_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/idp-proxy/idp-proxy/internal/problem"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/memstore"
)

// spyStore wraps a memstore, counts calls and can fail on demand.
type spyStore struct {
	*memstore.Store
	gets, creates   atomic.Int64
	failCreate      error
	failGet         error
	failPing        error
	failWriteVisits atomic.Bool
}

func (s *spyStore) WriteVisits(ctx context.Context, b shortener.VisitBatch) error {
	if s.failWriteVisits.Load() {
		return errors.New("database down")
	}
	return s.Store.WriteVisits(ctx, b)
}

func newSpy() *spyStore { return &spyStore{Store: memstore.New()} }

func (s *spyStore) Create(ctx context.Context, l shortener.Link) error {
	s.creates.Add(1)
	if s.failCreate != nil {
		return s.failCreate
	}
	return s.Store.Create(ctx, l)
}

func (s *spyStore) Get(ctx context.Context, code string) (shortener.Link, error) {
	s.gets.Add(1)
	if s.failGet != nil {
		return shortener.Link{}, s.failGet
	}
	return s.Store.Get(ctx, code)
}

func (s *spyStore) Ping(ctx context.Context) error {
	if s.failPing != nil {
		return s.failPing
	}
	return s.Store.Ping(ctx)
}

func newService(t *testing.T, st shortener.Store, o shortener.Options) *shortener.Service {
	t.Helper()
	if o.BaseURL == "" {
		o.BaseURL = "https://sho.rt/"
	}
	s, err := shortener.New(st, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newHandler returns the Handler of svc, failing the test on an error.
func newHandler(t testing.TB, svc *shortener.Service, o shortener.HandlerOptions) *shortener.Handler {
	t.Helper()
	h, err := shortener.NewHandler(svc, o)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func do(h http.Handler, method, target, ct, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

type created struct {
	ShortCode string `json:"short_code"`
	ShortURL  string `json:"short_url"`
	URL       string `json:"url"`
}

func mustShorten(t *testing.T, h http.Handler, u string) created {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"url": u})
	rec := do(h, "POST", "/shorten", "application/json", string(body))
	if rec.Code != http.StatusCreated {
		t.Fatalf("POST /shorten %q: %d %s", u, rec.Code, rec.Body)
	}
	var c created
	if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// checkProblem asserts a problem+json answer with the given status.
func checkProblem(t *testing.T, rec *httptest.ResponseRecorder, status int) problem.Details {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status = %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != problem.ContentType {
		t.Fatalf("Content-Type = %q, want %q", ct, problem.ContentType)
	}
	var d problem.Details
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil || d.Status != status || d.Detail == "" {
		t.Fatalf("problem body %s (%v)", rec.Body, err)
	}
	return d
}

func TestShortenCreated(t *testing.T) {
	st := newSpy()
	h := newHandler(t, newService(t, st, shortener.Options{}), shortener.HandlerOptions{})
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8"} {
		u := "https://example.com/a?b=c&d=é#frag"
		body := `{"url":"` + u + `","unknown":{"nested":[1,2,{"x":null}]},"other":true}`
		rec := do(h, "POST", "/shorten", ct, body)
		if rec.Code != http.StatusCreated {
			t.Fatalf("%s: status %d %s", ct, rec.Code, rec.Body)
		}
		if got := rec.Header().Get("Content-Type"); got != "application/json" {
			t.Fatalf("Content-Type = %q", got)
		}
		var c created
		if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		// The answer carries the URL as stored: in ASCII (é percent-encoded).
		if len(c.ShortCode) != shortener.DefaultCodeLength || c.URL != "https://example.com/a?b=c&d=%C3%A9#frag" || c.ShortURL != "https://sho.rt/"+c.ShortCode {
			t.Fatalf("body = %+v", c)
		}
		if loc := rec.Header().Get("Location"); loc != c.ShortURL {
			t.Fatalf("Location = %q, want %q", loc, c.ShortURL)
		}
		if !strings.Contains(rec.Body.String(), "&d=") {
			t.Fatalf("URL was HTML-escaped in %s", rec.Body)
		}
		l, err := st.Store.Get(t.Context(), c.ShortCode)
		if err != nil || l.URL != c.URL || l.CreatedBy != "" || l.CreatedAt.IsZero() {
			t.Fatalf("stored %+v, %v", l, err)
		}
	}
}

func TestShortenBadInput(t *testing.T) {
	big := `{"url":"https://example.com/","pad":"` + strings.Repeat("x", shortener.MaxBodyBytes) + `"}`
	tests := []struct {
		name, ct, body string
		status         int
	}{
		{"no content type", "", `{"url":"https://example.com/"}`, 415},
		{"text/plain", "text/plain", `{"url":"https://example.com/"}`, 415},
		{"form", "application/x-www-form-urlencoded", `url=https://example.com/`, 415},
		{"json+suffix", "application/problem+json", `{"url":"https://example.com/"}`, 415},
		{"latin1 charset", "application/json; charset=iso-8859-1", `{"url":"https://example.com/"}`, 415},
		{"extra param", "application/json; foo=bar", `{"url":"https://example.com/"}`, 415},
		{"malformed ct", "application/json; charset", `{"url":"https://example.com/"}`, 415},
		{"too large", "application/json", big, 413},
		{"empty body", "application/json", ``, 400},
		{"truncated", "application/json", `{"url":"https://example.com/"`, 400},
		{"not json", "application/json", `url=https://example.com/`, 400},
		{"array", "application/json", `["https://example.com/"]`, 400},
		{"null", "application/json", `null`, 400},
		{"string", "application/json", `"https://example.com/"`, 400},
		{"missing url", "application/json", `{}`, 400},
		{"other case key", "application/json", `{"URL":"https://example.com/"}`, 400},
		{"url number", "application/json", `{"url":42}`, 400},
		{"url null", "application/json", `{"url":null}`, 400},
		{"url bool", "application/json", `{"url":true}`, 400},
		{"url array", "application/json", `{"url":["https://example.com/"]}`, 400},
		{"url object", "application/json", `{"url":{"href":"https://example.com/"}}`, 400},
		{"duplicate url", "application/json", `{"url":"https://example.com/","url":"https://evil.example/"}`, 400},
		{"duplicate escaped", "application/json", `{"url":"https://example.com/","\u0075rl":"https://evil.example/"}`, 400},
		{"trailing object", "application/json", `{"url":"https://example.com/"}{}`, 400},
		{"trailing garbage", "application/json", `{"url":"https://example.com/"} x`, 400},
		{"bad unknown value", "application/json", `{"x":tru,"url":"https://example.com/"}`, 400},
		{"invalid utf8", "application/json", "{\"url\":\"https://example.com/\xff\"}", 400},
		{"empty url", "application/json", `{"url":""}`, 400},
		{"relative", "application/json", `{"url":"/foo"}`, 400},
		{"no scheme", "application/json", `{"url":"example.com"}`, 400},
		{"javascript", "application/json", `{"url":"javascript:alert(1)"}`, 400},
		{"data", "application/json", `{"url":"data:text/html,hi"}`, 400},
		{"file", "application/json", `{"url":"file:///etc/passwd"}`, 400},
		{"ftp", "application/json", `{"url":"ftp://example.com/"}`, 400},
		{"userinfo", "application/json", `{"url":"https://u:p@example.com/"}`, 400},
		{"no host", "application/json", `{"url":"https:///x"}`, 400},
		{"space", "application/json", `{"url":"https://example.com/a b"}`, 400},
		{"newline", "application/json", `{"url":"https://example.com/\r\nX: y"}`, 400},
		{"nul", "application/json", `{"url":"https://example.com/\u0000"}`, 400},
		{"too long url", "application/json", `{"url":"https://example.com/` + strings.Repeat("a", 2048) + `"}`, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newSpy()
			h := newHandler(t, newService(t, st, shortener.Options{}), shortener.HandlerOptions{})
			rec := do(h, "POST", "/shorten", tc.ct, tc.body)
			checkProblem(t, rec, tc.status)
			if st.Len() != 0 || st.creates.Load() != 0 {
				t.Fatalf("store touched: %d links, %d creates", st.Len(), st.creates.Load())
			}
		})
	}
}

// chunked bodies have no Content-Length: the limit must still hold.
func TestShortenTooLargeChunked(t *testing.T) {
	st := newSpy()
	h := newHandler(t, newService(t, st, shortener.Options{}), shortener.HandlerOptions{})
	body := io.MultiReader(strings.NewReader(`{"url":"https://example.com/","pad":"`), strings.NewReader(strings.Repeat("y", 20<<10)), strings.NewReader(`"}`))
	req := httptest.NewRequest("POST", "/shorten", body)
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	checkProblem(t, rec, 413)
	if st.Len() != 0 {
		t.Fatal("link stored")
	}
}

func TestRedirect(t *testing.T) {
	st := newSpy()
	h := newHandler(t, newService(t, st, shortener.Options{}), shortener.HandlerOptions{})
	urls := []string{
		"https://example.com/",
		"https://例え.テスト/パス?q=値",
		"https://example.com/%7Euser/./a/../b?x=%2f&y=a+b#frag",
		"HTTP://Example.COM//double//slash",
	}
	for _, u := range urls {
		c := mustShorten(t, h, u)
		for _, method := range []string{"GET", "HEAD"} {
			rec := do(h, method, "/"+c.ShortCode, "", "")
			if rec.Code != http.StatusFound {
				t.Fatalf("%s /%s = %d", method, c.ShortCode, rec.Code)
			}
			want := u
			if w, ok := asciiForm[u]; ok {
				want = w
			}
			if loc := rec.Header()["Location"]; len(loc) != 1 || loc[0] != want {
				t.Fatalf("Location = %q, want %q byte for byte", loc, want)
			}
			if cc := rec.Header().Get("Cache-Control"); cc != "private, max-age=0" {
				t.Fatalf("Cache-Control = %q", cc)
			}
		}
	}
}

func TestLookupNotFoundAndMalformed(t *testing.T) {
	st := newSpy()
	h := newHandler(t, newService(t, st, shortener.Options{}), shortener.HandlerOptions{})
	rec := do(h, "GET", "/Zz9Yy8X", "", "")
	checkProblem(t, rec, 404)
	if st.gets.Load() != 1 {
		t.Fatalf("well-formed unknown code: %d store lookups, want 1", st.gets.Load())
	}
	st.gets.Store(0)
	for _, path := range []string{
		"/", "/abc", "/abcdef", "/" + strings.Repeat("a", 17), "/abc-def", "/abc_def", "/abc.def",
		"/abcdéfg", "/abcdefg/", "/abc/defg", "/abc%2Fdefg", "/abc%00efg", "/shorten1/x",
		"/healthz", "/metrics", "/shorten/", "/health/", "/Shorten", "/HEALTHZ", "/robots.txt", "/favicon.ico",
	} {
		rec := do(h, "GET", path, "", "")
		checkProblem(t, rec, 404)
	}
	if n := st.gets.Load(); n != 0 {
		t.Fatalf("malformed codes caused %d store lookups", n)
	}
}

func TestMethodNotAllowed(t *testing.T) {
	h := newHandler(t, newService(t, newSpy(), shortener.Options{}), shortener.HandlerOptions{})
	tests := []struct{ method, path, allow string }{
		{"GET", "/shorten", "POST"},
		{"PUT", "/shorten", "POST"},
		{"POST", "/health", "GET, HEAD"},
		{"DELETE", "/abcdefg", "GET, HEAD"},
		{"POST", "/abcdefg", "GET, HEAD"},
	}
	for _, tc := range tests {
		rec := do(h, tc.method, tc.path, "application/json", `{"url":"https://example.com/"}`)
		checkProblem(t, rec, 405)
		if got := rec.Header().Get("Allow"); got != tc.allow {
			t.Fatalf("%s %s: Allow = %q, want %q", tc.method, tc.path, got, tc.allow)
		}
	}
}

func TestHealth(t *testing.T) {
	st := newSpy()
	h := newHandler(t, newService(t, st, shortener.Options{}), shortener.HandlerOptions{})
	rec := do(h, "GET", "/health", "", "")
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("health = %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	if got := strings.TrimSpace(rec.Body.String()); got != `{"status":"healthy","service":"url_shortener"}` {
		t.Fatalf("health body = %s", got)
	}
	if rec := do(h, "HEAD", "/health", "", ""); rec.Code != 200 {
		t.Fatalf("HEAD /health = %d", rec.Code)
	}
	if st.gets.Load() != 0 {
		t.Fatal("/health was answered by the code lookup")
	}
	st.failPing = errors.New("connection refused")
	rec = do(h, "GET", "/health", "", "")
	if rec.Code != 503 || strings.TrimSpace(rec.Body.String()) != `{"status":"unhealthy","service":"url_shortener"}` {
		t.Fatalf("unhealthy = %d %s", rec.Code, rec.Body)
	}
}

func TestStoreFailures(t *testing.T) {
	var logs bytes.Buffer
	st := newSpy()
	h := newHandler(t, newService(t, st, shortener.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}), shortener.HandlerOptions{})
	c := mustShorten(t, h, "https://example.com/")

	st.failCreate = errors.New("disk on fire at /secret/path")
	rec := do(h, "POST", "/shorten", "application/json", `{"url":"https://example.com/x"}`)
	// A store failure is the store's outage, not a bug of the request or
	// of the service: 503 naming the store, with Retry-After, on every
	// operation.
	d := checkProblem(t, rec, 503)
	if strings.Contains(d.Detail, "fire") || !strings.Contains(d.Detail, "link store") || !strings.Contains(logs.String(), "disk on fire") {
		t.Fatalf("detail %q leaks or does not name the store, or log %q misses the error", d.Detail, logs.String())
	}
	if rec.Header().Get("Retry-After") == "" {
		t.Error("POST /shorten during a store failure: no Retry-After")
	}

	st.failGet = errors.New("read timeout")
	rec = do(h, "GET", "/"+c.ShortCode, "", "")
	d = checkProblem(t, rec, 503)
	if strings.Contains(d.Detail, "timeout") || !strings.Contains(d.Detail, "link store") {
		t.Fatalf("detail leaks or does not name the store: %q", d.Detail)
	}
	if rec.Header().Get("Retry-After") == "" {
		t.Error("GET /{code} during a store failure: no Retry-After")
	}
}

func TestOwner(t *testing.T) {
	st := newSpy()
	h := newHandler(t, newService(t, st, shortener.Options{}), shortener.HandlerOptions{Owner: shortener.OwnerFromHeader("x-auth-request-user")})
	tests := []struct {
		name   string
		values []string
		want   string
	}{
		{"set", []string{"alice"}, "alice"},
		{"trimmed", []string{"  bob "}, "bob"},
		{"absent", nil, ""},
		{"ambiguous", []string{"alice", "mallory"}, ""},
		{"control", []string{"ali\x01ce"}, ""},
		{"too long", []string{strings.Repeat("a", 257)}, ""},
		{"unicode", []string{"zoë"}, "zoë"},
	}
	for _, tc := range tests {
		req := httptest.NewRequest("POST", "/shorten", strings.NewReader(`{"url":"https://example.com/"}`))
		req.Header.Set("Content-Type", "application/json")
		for _, v := range tc.values {
			req.Header.Add("X-Auth-Request-User", v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var c created
		if rec.Code != 201 || json.Unmarshal(rec.Body.Bytes(), &c) != nil {
			t.Fatalf("%s: %d %s", tc.name, rec.Code, rec.Body)
		}
		l, err := st.Store.Get(t.Context(), c.ShortCode)
		if err != nil || l.CreatedBy != tc.want {
			t.Fatalf("%s: created_by = %q (%v), want %q", tc.name, l.CreatedBy, err, tc.want)
		}
	}
}

// TestConcurrentShorten: many goroutines at once, all codes distinct and
// all resolvable to their own URL.
func TestConcurrentShorten(t *testing.T) {
	st := memstore.New()
	h := newHandler(t, newService(t, st, shortener.Options{}), shortener.HandlerOptions{})
	const workers, each = 32, 40
	var (
		mu    sync.Mutex
		codes = map[string]string{}
		wg    sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				u := fmt.Sprintf("https://example.com/%d/%d", w, i)
				rec := do(h, "POST", "/shorten", "application/json", `{"url":"`+u+`"}`)
				var c created
				if rec.Code != 201 || json.Unmarshal(rec.Body.Bytes(), &c) != nil {
					t.Errorf("POST: %d %s", rec.Code, rec.Body)
					return
				}
				mu.Lock()
				if prev, dup := codes[c.ShortCode]; dup {
					t.Errorf("code %s issued twice (%s, %s)", c.ShortCode, prev, u)
				}
				codes[c.ShortCode] = u
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(codes) != workers*each {
		t.Fatalf("%d codes, want %d", len(codes), workers*each)
	}
	for code, u := range codes {
		rec := do(h, "GET", "/"+code, "", "")
		if rec.Code != 302 || rec.Header().Get("Location") != u {
			t.Fatalf("GET /%s = %d %q, want %q", code, rec.Code, rec.Header().Get("Location"), u)
		}
	}
}

// asciiForm is how an internationalised URL is stored and answered:
// punycode host, percent-encoded path and query, never raw UTF-8.
var asciiForm = map[string]string{
	"https://例え.テスト/パス?q=値": "https://xn--r8jz45g.xn--zckzah/%E3%83%91%E3%82%B9?q=%E5%80%A4",
}

func TestInternationalisedURLs(t *testing.T) {
	h := newHandler(t, newService(t, newSpy(), shortener.Options{}), shortener.HandlerOptions{})
	for in, want := range map[string]string{
		"https://例え.テスト/パス?q=値":        "https://xn--r8jz45g.xn--zckzah/%E3%83%91%E3%82%B9?q=%E5%80%A4",
		"https://Bücher.example:8443/": "https://xn--bcher-kva.example:8443/",
		"https://example.com/ü#ä":      "https://example.com/%C3%BC#%C3%A4",
	} {
		c := mustShorten(t, h, in)
		rec := do(h, "GET", "/"+c.ShortCode, "", "")
		if loc := rec.Header().Get("Location"); loc != want {
			t.Errorf("%s: Location %q, want %q", in, loc, want)
		}
	}
	for _, bad := range []string{"https://\u05d0a.com/", "https://ex\u2488ample.com/", "https://-abc\u00e9.com/", "https://\u0301abc.com/"} {
		rec := do(h, "POST", "/shorten", "application/json", `{"url":"`+bad+`"}`)
		if rec.Code != http.StatusBadRequest || rec.Header().Get("Content-Type") != "application/problem+json" ||
			!strings.Contains(rec.Body.String(), "internationalised") {
			t.Errorf("%s: %d %s, want 400 problem+json", bad, rec.Code, rec.Body)
		}
	}
}
