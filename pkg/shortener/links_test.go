package shortener_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

func TestListPages(t *testing.T) {
	a := newAPI(t, nil)
	var want []string
	for i := range 7 {
		want = append(want, a.create("alice", fmt.Sprintf(`{"url":"https://example.com/%d"}`, i)).ShortCode)
		a.create("bob", `{"url":"https://example.com/bob"}`)
		a.clock.add(time.Second)
	}
	slices.Reverse(want)
	var got []string
	cursor := ""
	for page := 0; ; page++ {
		target := "/links?limit=3"
		if cursor != "" {
			target += "&cursor=" + url.QueryEscape(cursor)
		}
		l := decodeJSON[listJSON](t, a.call("GET", target, "alice", ""), 200)
		for _, x := range l.Links {
			got = append(got, x.ShortCode)
			if x.Visits != 0 || x.Status != "active" || x.ExpiresAt != nil || x.MaxVisits != nil || x.CreatedAt.IsZero() {
				t.Fatalf("link %+v", x)
			}
		}
		if l.NextCursor == nil {
			if page != 2 {
				t.Fatalf("last page is %d, want 2", page)
			}
			break
		}
		cursor = *l.NextCursor
	}
	if !slices.Equal(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	// Default limit, and a user without links.
	if l := decodeJSON[listJSON](t, a.call("GET", "/links", "alice", ""), 200); len(l.Links) != 7 || l.NextCursor != nil {
		t.Fatalf("default page: %d links, next %v", len(l.Links), l.NextCursor)
	}
	if rec := a.call("GET", "/links", "carol", ""); strings.TrimSpace(rec.Body.String()) != `{"links":[],"next_cursor":null,"user":{"id":"carol","name":"carol","admin":false}}` {
		t.Fatalf("empty list: %s", rec.Body)
	}
	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "limit=1&limit=2", "cursor=%%%", "cursor=abc", "cursor=" + strings.Repeat("A", 200), "sort=asc", "limit=5;x=1"} {
		checkProblem(t, a.call("GET", "/links?"+q, "alice", ""), 400)
	}
}

func TestGetAndDeleteOwnership(t *testing.T) {
	a := newAPI(t, nil)
	l := a.create("alice", `{"url":"https://example.com/mine","max_visits":5,"expires_at":"2031-01-01T00:00:00Z"}`)
	got := decodeJSON[linkJSON](t, a.call("GET", "/links/"+l.ShortCode, "alice", ""), 200)
	if got.ShortCode != l.ShortCode || got.URL != "https://example.com/mine" || *got.MaxVisits != 5 || !got.ExpiresAt.Equal(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("GET = %+v", got)
	}
	// Someone else's link and a missing one look the same.
	for _, path := range []string{"/links/" + l.ShortCode, "/links/nosuchcode", "/links/" + l.ShortCode + "/qr"} {
		a1 := checkProblem(t, a.call("GET", path, "bob", ""), 404)
		a2 := checkProblem(t, a.call("GET", strings.Replace(path, l.ShortCode, "zzzzzzz", 1), "bob", ""), 404)
		if a1 != a2 {
			t.Fatalf("%s: bob can tell a foreign link (%+v) from a missing one (%+v)", path, a1, a2)
		}
	}
	checkProblem(t, a.call("DELETE", "/links/"+l.ShortCode, "bob", ""), 404)
	checkProblem(t, a.call("DELETE", "/links/"+l.ShortCode, "bob", "", "X-Roles", "editor, creator"), 404)
	if rec := a.call("GET", "/"+l.ShortCode, "", ""); rec.Code != 302 {
		t.Fatalf("link gone after a refused delete: %d", rec.Code)
	}
	// An administrator sees and deletes any link.
	decodeJSON[linkJSON](t, a.call("GET", "/links/"+l.ShortCode, "root", "", "X-Roles", "viewer,admin"), 200)
	other := a.create("alice", `{"url":"https://example.com/other"}`)
	// Warm the redirect cache, then delete: the redirect stops at once.
	if rec := a.call("GET", "/"+other.ShortCode, "", ""); rec.Code != 302 {
		t.Fatal(rec.Code)
	}
	if rec := a.call("DELETE", "/links/"+other.ShortCode, "alice", ""); rec.Code != 204 || rec.Body.Len() != 0 {
		t.Fatalf("owner DELETE: %d %s", rec.Code, rec.Body)
	}
	checkProblem(t, a.call("GET", "/"+other.ShortCode, "", ""), 404)
	checkProblem(t, a.call("DELETE", "/links/"+other.ShortCode, "alice", ""), 404)
	if rec := a.call("DELETE", "/links/"+l.ShortCode, "root", "", "X-Roles", "admin"); rec.Code != 204 {
		t.Fatalf("admin DELETE: %d", rec.Code)
	}
	checkProblem(t, a.call("GET", "/"+l.ShortCode, "", ""), 404)
	if l := decodeJSON[listJSON](t, a.call("GET", "/links", "alice", ""), 200); len(l.Links) != 0 {
		t.Fatalf("deleted links listed: %+v", l.Links)
	}
}

func TestExpiry(t *testing.T) {
	a := newAPI(t, nil)
	l := a.create("alice", `{"url":"https://example.com/soon","expires_at":"2030-01-01T12:01:00Z"}`)
	if rec := a.call("GET", "/"+l.ShortCode, "", ""); rec.Code != 302 { // now cached
		t.Fatalf("before expiry: %d", rec.Code)
	}
	a.clock.add(time.Minute)
	checkProblem(t, a.call("GET", "/"+l.ShortCode, "", ""), 410)
	checkProblem(t, a.call("HEAD", "/"+l.ShortCode, "", ""), 410)
	rec := a.call("GET", "/"+l.ShortCode, "", "", "Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
	if rec.Code != 410 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") || !strings.Contains(rec.Body.String(), "gone") {
		t.Fatalf("browser 410: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	if got := decodeJSON[linkJSON](t, a.call("GET", "/links/"+l.ShortCode, "alice", ""), 200); got.Status != "expired" {
		t.Fatalf("status %q", got.Status)
	}
}

func TestMaxVisits(t *testing.T) {
	a := newAPI(t, nil)
	l := a.create("alice", `{"url":"https://example.com/thrice","max_visits":3}`)
	for i := range 5 { // HEAD checks without using a visit
		if rec := a.call("HEAD", "/"+l.ShortCode, "", ""); rec.Code != 302 {
			t.Fatalf("HEAD %d: %d", i, rec.Code)
		}
	}
	gets := a.st.gets.Load()
	for i := range 3 {
		if rec := a.call("GET", "/"+l.ShortCode, "", ""); rec.Code != 302 || rec.Header().Get("Location") != "https://example.com/thrice" {
			t.Fatalf("visit %d: %d", i+1, rec.Code)
		}
	}
	if a.st.gets.Load()-gets != 3 {
		t.Fatalf("a limited link was served from the cache (%d store reads for 3 visits)", a.st.gets.Load()-gets)
	}
	d := checkProblem(t, a.call("GET", "/"+l.ShortCode, "", ""), 410)
	if !strings.Contains(d.Detail, "maximum number of visits") {
		t.Fatalf("detail %q", d.Detail)
	}
	got := decodeJSON[linkJSON](t, a.call("GET", "/links/"+l.ShortCode, "alice", ""), 200)
	if got.Visits != 3 || got.Status != "exhausted" {
		t.Fatalf("link %+v", got)
	}
}

// TestVisitCounting: visits of unlimited links are counted in memory,
// shown at once, and written to the store by the flush or by Close.
func TestVisitCounting(t *testing.T) {
	a := newAPI(t, nil)
	l := a.create("alice", `{"url":"https://example.com/"}`)
	for range 5 {
		a.call("GET", "/"+l.ShortCode, "", "")
	}
	a.call("HEAD", "/"+l.ShortCode, "", "")
	if got := decodeJSON[linkJSON](t, a.call("GET", "/links/"+l.ShortCode, "alice", ""), 200); got.Visits != 5 {
		t.Fatalf("visits = %d, want 5 (counted in memory)", got.Visits)
	}
	if stored, _ := a.st.Store.Get(t.Context(), l.ShortCode); stored.Visits != 0 {
		t.Fatalf("stored before the flush: %d", stored.Visits)
	}
	if err := a.svc.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if stored, _ := a.st.Store.Get(t.Context(), l.ShortCode); stored.Visits != 5 {
		t.Fatalf("stored after Close: %d, want 5", stored.Visits)
	}
	if got := decodeJSON[linkJSON](t, a.call("GET", "/links/"+l.ShortCode, "alice", ""), 200); got.Visits != 5 {
		t.Fatalf("visits counted twice: %d", got.Visits)
	}
}

func TestVisitFlushInterval(t *testing.T) {
	a := newAPI(t, func(o *apiOptions) { o.VisitFlushInterval = 20 * time.Millisecond })
	l := a.create("alice", `{"url":"https://example.com/"}`)
	for range 3 {
		a.call("GET", "/"+l.ShortCode, "", "")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if stored, _ := a.st.Store.Get(t.Context(), l.ShortCode); stored.Visits == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("visits never flushed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A flush that fails is retried: the counts stay.
	a.st.failWriteVisits.Store(true)
	a.call("GET", "/"+l.ShortCode, "", "")
	time.Sleep(100 * time.Millisecond)
	if got := decodeJSON[linkJSON](t, a.call("GET", "/links/"+l.ShortCode, "alice", ""), 200); got.Visits != 4 {
		t.Fatalf("visits after a failed flush = %d, want 4", got.Visits)
	}
	a.st.failWriteVisits.Store(false)
	deadline = time.Now().Add(5 * time.Second)
	for {
		if stored, _ := a.st.Store.Get(t.Context(), l.ShortCode); stored.Visits == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("failed flush never retried")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestQRCode(t *testing.T) {
	a := newAPI(t, nil)
	l := a.create("alice", `{"url":"https://example.com/","short_code":"qr-test"}`)
	rec := a.call("GET", "/links/qr-test/qr", "alice", "")
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "image/png" {
		t.Fatalf("PNG: %d %q %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	img, err := png.Decode(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	bits, err := shortener.QRMatrix(l.ShortURL)
	if err != nil {
		t.Fatal(err)
	}
	side := (len(bits) + 8) * 8
	if b := img.Bounds(); b.Dx() != side || b.Dy() != side {
		t.Fatalf("PNG %v, want %d px square", b, side)
	}
	// Quiet zone white, finder pattern's corner dark.
	if r, _, _, _ := img.At(2, 2).RGBA(); r != 0xffff {
		t.Fatal("quiet zone is not white")
	}
	if r, _, _, _ := img.At(4*8+1, 4*8+1).RGBA(); r != 0 {
		t.Fatal("finder pattern is not dark")
	}
	rec = a.call("GET", "/links/qr-test/qr", "alice", "", "Accept", "image/svg+xml, image/png;q=0.5")
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(rec.Body.String(), "<svg") {
		t.Fatalf("SVG: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	if rec := a.call("GET", "/links/qr-test/qr", "alice", "", "Accept", "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"); rec.Header().Get("Content-Type") != "image/png" {
		t.Fatalf("browser <img>: %q", rec.Header().Get("Content-Type"))
	}
	checkProblem(t, a.call("GET", "/links/qr-test/qr", "alice", "", "Accept", "text/plain"), 406)
	checkProblem(t, a.call("GET", "/links/qr-test/qr?size=9", "alice", ""), 400)
	checkProblem(t, a.call("GET", "/links/qr-test/qr", "bob", ""), 404)
}

// TestOpenAPIMatchesRoutes: the document lists exactly the routes the
// handler serves, and the handler serves each one.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	a := newAPI(t, nil)
	rec := a.call("GET", "/openapi.json", "", "")
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(decodeJSON[json.RawMessage](t, rec, 200), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			if method == "parameters" {
				continue
			}
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	served := map[string]bool{}
	for _, rt := range a.h.Routes() {
		path := strings.Replace(rt.Pattern, "/{$}", "/", 1)
		served[rt.Method+" "+path] = true
		// The route is really served: neither a 405 nor the router's 404.
		target := strings.ReplaceAll(path, "{code}", "Abc1234")
		body := ""
		if rt.Method == "POST" {
			body = `{"url":"https://example.com/"}`
		}
		rec := a.call(rt.Method, target, "alice", body)
		if rec.Code == 405 || (rec.Code == 404 && strings.Contains(rec.Body.String(), `"not found"`)) {
			t.Errorf("%s %s is listed but not served: %d %s", rt.Method, target, rec.Code, rec.Body)
		}
	}
	for k := range served {
		if !documented[k] {
			t.Errorf("served but not documented: %s", k)
		}
	}
	for k := range documented {
		if !served[k] {
			t.Errorf("documented but not served: %s", k)
		}
	}
	// Every $ref resolves.
	raw := string(shortener.OpenAPI())
	for _, m := range regexp.MustCompile(`"\$ref": "#/components/(\w+)/(\w+)"`).FindAllStringSubmatch(raw, -1) {
		if !strings.Contains(raw, `"`+m[2]+`": {`) {
			t.Errorf("dangling $ref %s", m[0])
		}
	}
}

func TestPage(t *testing.T) {
	a := newAPI(t, func(o *apiOptions) { o.LoginURL = "/auth/login?return_to=/&x=<y>" })
	rec := a.call("GET", "/", "", "")
	body := rec.Body.String()
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	csp := rec.Header().Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Fatalf("CSP %q", csp)
	}
	for _, want := range []string{`<label for="url">`, `<label for="short_code">`, `<label for="expires_at">`, `href="/auth/login?return_to=/&amp;x=%3cy%3e"`, `lang="en"`, `name="viewport"`, `role="status"`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	// No external asset: every src and href is relative to this site.
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(body, -1) {
		if strings.Contains(m[1], "//") {
			t.Errorf("external reference %s", m[1])
		}
	}
	for path, ct := range map[string]string{"/assets/app.js": "text/javascript; charset=utf-8", "/assets/app.css": "text/css; charset=utf-8"} {
		rec := a.call("GET", path, "", "")
		if rec.Code != 200 || rec.Header().Get("Content-Type") != ct || rec.Body.Len() < 100 {
			t.Errorf("%s: %d %q", path, rec.Code, rec.Header().Get("Content-Type"))
		}
		if strings.Contains(rec.Body.String(), "http://") || strings.Contains(rec.Body.String(), "https://") {
			t.Errorf("%s refers to another site", path)
		}
	}
	checkProblem(t, a.call("GET", "/assets/other.js", "", ""), 404)
	checkProblem(t, a.call("POST", "/", "", ""), 405)
	off := newAPI(t, func(o *apiOptions) { o.Page = false; o.CustomCodes = false })
	checkProblem(t, off.call("GET", "/", "", ""), 404)
	checkProblem(t, off.call("GET", "/assets/app.js", "", ""), 404)
	if off := newAPI(t, func(o *apiOptions) { o.CustomCodes = false }); strings.Contains(off.call("GET", "/", "", "").Body.String(), "short_code") {
		t.Error("page offers custom codes that the service refuses")
	}
}
