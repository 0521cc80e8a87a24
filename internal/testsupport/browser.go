package testsupport

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"testing"
	"time"
)

// Browser returns a cookie-keeping client that does not follow redirects,
// so that a test walks a sign-in one hop at a time (cookies ignore ports:
// servers on one loopback address share them).
func Browser(t testing.TB) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Navigate GETs u with c as a browser does (Accept: text/html) and
// returns the answer, its body read and closed.
func Navigate(t testing.TB, c *http.Client, u string) *http.Response {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Accept", "text/html")
	resp, err := c.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}
