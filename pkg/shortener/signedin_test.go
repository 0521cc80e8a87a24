package shortener_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/shortener"
)

// The page names who is signed in (GET /links answers the caller, with
// HandlerOptions.DisplayName's name) and links to LogoutURL to sign out.
func TestPageShowsWhoIsSignedIn(t *testing.T) {
	st := newSpy()
	h := newHandler(t, newService(t, st, shortener.Options{}), shortener.HandlerOptions{
		Owner: shortener.OwnerFromHeader("X-User"), DisplayName: shortener.NameFromHeader("X-Name"),
		Page: true, LogoutURL: "/auth/logout",
	})
	req := httptest.NewRequest("GET", "/links", nil)
	req.Header.Set("X-User", "f81d4fae-7dec")
	req.Header.Set("X-Name", "=?UTF-8?B?"+"w6lsaXNl"+"?=") // élise, as idp-proxy encodes it
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var list struct {
		User struct{ ID, Name string } `json:"user"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil || rec.Code != 200 {
		t.Fatalf("GET /links: %d %s", rec.Code, rec.Body)
	}
	if list.User.ID != "f81d4fae-7dec" || list.User.Name != "élise" {
		t.Errorf("user = %+v, want id f81d4fae-7dec, name élise", list.User)
	}
	// Without a display name, the identity is the name.
	req.Header.Del("X-Name")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if !strings.Contains(rec.Body.String(), `"user":{"id":"f81d4fae-7dec","name":"f81d4fae-7dec"`) {
		t.Errorf("GET /links without a name: %s", rec.Body)
	}

	page := do(h, "GET", "/", "", "").Body.String()
	for _, want := range []string{`id="who"`, `id="who-name"`, `href="/auth/logout"`, "Sign out"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	js := do(h, "GET", "/assets/app.js", "", "").Body.String()
	if !strings.Contains(js, "page.user") || !strings.Contains(js, `"who-name"`) {
		t.Error("app.js does not show the user GET /links answers")
	}
	// No LogoutURL: no sign-out link.
	h2 := newHandler(t, newService(t, newSpy(), shortener.Options{}), shortener.HandlerOptions{Page: true})
	if page := do(h2, "GET", "/", "", "").Body.String(); strings.Contains(page, "Sign out") {
		t.Error("a sign-out link without LogoutURL")
	}
	for _, bad := range []string{"https://evil.example/logout", "//evil.example/", "logout"} {
		if _, err := shortener.NewHandler(newService(t, newSpy(), shortener.Options{}), shortener.HandlerOptions{LogoutURL: bad}); err == nil {
			t.Errorf("LogoutURL %q accepted", bad)
		}
	}
}

// The page's icon is served, never looked up as a short code, and
// /signed-out (where a sign-out ends) needs no identity and links to the
// sign-in.
func TestFaviconAndSignedOutPage(t *testing.T) {
	st := newSpy()
	h := newHandler(t, newService(t, st, shortener.Options{CustomCodes: true}), shortener.HandlerOptions{Page: true, LoginURL: "/auth/login?return_to=/"})
	rec := do(h, "GET", "/favicon.ico", "", "")
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "image/x-icon" || !strings.HasPrefix(rec.Body.String(), "\x00\x00\x01\x00") {
		t.Errorf("GET /favicon.ico: %d %q %.8q", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
	}
	rec = do(h, "GET", "/signed-out", "", "")
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") ||
		!strings.Contains(rec.Body.String(), `href="/auth/login?return_to=/"`) {
		t.Errorf("GET /signed-out: %d %s", rec.Code, rec.Body)
	}
	// Styled like the page, by the stylesheet the page's CSP allows.
	if !strings.Contains(rec.Body.String(), `<link rel="stylesheet" href="assets/app.css">`) {
		t.Errorf("the signed-out page has no stylesheet:\n%s", rec.Body)
	}
	if css := do(h, "GET", "/assets/app.css", "", ""); css.Code != 200 || !strings.HasPrefix(css.Header().Get("Content-Type"), "text/css") {
		t.Errorf("GET /assets/app.css: %d %q", css.Code, css.Header().Get("Content-Type"))
	}
	if n := st.gets.Load(); n != 0 {
		t.Errorf("%d store lookups for the icon and the signed-out page", n)
	}
	if !strings.Contains(do(h, "GET", "/", "", "").Body.String(), `rel="icon" href="favicon.ico"`) {
		t.Error("the page does not name its icon")
	}
	for _, code := range []string{"signed-out", "favicon.ico"} {
		rec := do(h, "POST", "/shorten", "application/json", `{"url":"https://example.com/","short_code":"`+code+`"}`)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("custom code %q: %d", code, rec.Code)
		}
	}
}

// FuzzNameFromHeader: any header value gives a clean name or "".
func FuzzNameFromHeader(f *testing.F) {
	for _, s := range []string{"alice", "=?UTF-8?B?w6lsaXNl?=", "=?UTF-8?Q?a=0Ab?=", "=?bogus", " x ", "\x00", strings.Repeat("a", 300)} {
		f.Add(s)
	}
	name := shortener.NameFromHeader("X-Name")
	f.Fuzz(func(t *testing.T, v string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header["X-Name"] = []string{v}
		got := name(r)
		if len(got) > 256 || strings.ContainsAny(got, "\x00\r\n\x7f") || strings.TrimSpace(got) != got {
			t.Fatalf("NameFromHeader(%q) = %q", v, got)
		}
	})
}
