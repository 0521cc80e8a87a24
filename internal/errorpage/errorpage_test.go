package errorpage

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestWanted(t *testing.T) {
	const chrome = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"
	for _, c := range []struct {
		mode, accept string
		want         bool
	}{
		{"navigate", chrome, true},
		{"navigate", "", true},
		{"nested-navigate", chrome, true},
		{"cors", chrome, false},
		{"no-cors", "text/html", false},
		{"same-origin", "text/html", false},
		{"", chrome, true},
		{"", "text/html", true},
		{"", "TEXT/HTML; charset=utf-8", true},
		{"", "application/xhtml+xml", true},
		{"", "", false},
		{"", "*/*", false}, // curl
		{"", "application/json", false},
		{"", "application/problem+json, text/html;q=0.5", false},
		{"", "text/html, application/json", false}, // a tie: the API's answer
		{"", "text/html;q=0.9, */*;q=0.9", false},
		{"", "text/html;q=0, */*", false},
		{"", "text/html;q=bogus", false},
		{"", "text/html;q=2", false},
		{"", "application/json;q=0.5, text/html", true},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if c.mode != "" {
			r.Header.Set("Sec-Fetch-Mode", c.mode)
		}
		if c.accept != "" {
			r.Header.Set("Accept", c.accept)
		}
		if got := Wanted(r); got != c.want {
			t.Errorf("Sec-Fetch-Mode %q, Accept %q: Wanted = %v, want %v", c.mode, c.accept, got, c.want)
		}
	}
}

// The page is escaped data in a fixed template; its inline stylesheet is
// the one its Content-Security-Policy allows; the caller's headers stay.
func TestWrite(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.Header().Set("WWW-Authenticate", `Bearer realm="demo", error="insufficient_scope"`)
	rec.Header().Set("X-Request-Id", "req-1")
	Write(rec, Page{Status: http.StatusForbidden, Detail: `the token lacks <script>alert(1)</script>`,
		User: `<b>alice</b>`, SignOut: "/auth/logout", Home: `javascript:alert(1)`})
	body := rec.Body.String()
	if rec.Code != 403 || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("%d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	if rec.Header().Get("WWW-Authenticate") == "" || rec.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("headers: %v", rec.Header())
	}
	for _, want := range []string{"<title>Access denied</title>", "You may not open this page.",
		"the token lacks &lt;script&gt;alert(1)&lt;/script&gt;", "Signed in as <strong>&lt;b&gt;alice&lt;/b&gt;</strong>",
		`<form method="post" action="/auth/logout">`, `href="#ZgotmplZ"`, "HTTP 403 · Forbidden · request req-1"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<script") || strings.Contains(body, "Sign in again") || strings.Contains(body, "Try again") {
		t.Errorf("page holds markup it must not:\n%s", body)
	}
	start, end := strings.Index(body, "<style>"), strings.Index(body, "</style>")
	if start < 0 || end < start {
		t.Fatalf("no stylesheet:\n%s", body)
	}
	sum := sha256.Sum256([]byte(body[start+len("<style>") : end]))
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "style-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") {
		t.Errorf("the CSP %q does not allow the inline stylesheet", csp)
	}
	if !strings.Contains(body, "--accent: #0b57d0") {
		t.Error("the page is not styled like the shortener's")
	}
}

func TestWriteDefaults(t *testing.T) {
	for status, want := range map[int]string{421: "Unknown site", 502: "Service unavailable", 504: "did not answer in time", 418: "I&#39;m a teapot"} {
		rec := httptest.NewRecorder()
		Write(rec, Page{Status: status, Retry: "/page?a=1&b=2"})
		if rec.Code != status || !strings.Contains(rec.Body.String(), want) || !strings.Contains(rec.Body.String(), `href="/page?a=1&amp;b=2">Try again`) {
			t.Errorf("%d: %d\n%s", status, rec.Code, rec.Body)
		}
	}
}
