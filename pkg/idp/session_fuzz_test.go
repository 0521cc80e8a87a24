package idp_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// FuzzSessionCookie feeds arbitrary Cookie headers to a plugin in session
// mode (cookie store). Whatever the header, Authorize never panics, never
// answers "unavailable" (nothing is down), and allows the request only
// when the header carries the genuine session's chunks.
func FuzzSessionCookie(f *testing.F) {
	e := sessionEnv(f, nil, nil)
	e.signIn(f, "/me")
	u, _ := url.Parse(e.base)
	var genuine []string
	for _, c := range e.client.Jar.Cookies(u) {
		genuine = append(genuine, c.Name+"="+c.Value)
	}
	header := strings.Join(genuine, "; ")
	f.Add(header)
	f.Add(strings.ReplaceAll(header, "; ", ";"))
	f.Add("idp_session=" + strings.Repeat("A", 5000))
	f.Add("idp_session=a; idp_session=b")
	f.Add("idp_session_1=x")
	f.Add("idp_session=x; idp_session_2=y")
	f.Add("idp_session=x; idp_session_9=y")
	f.Add("idp_sessionX=1; idp_session_=2")
	f.Fuzz(func(t *testing.T, cookie string) {
		r := httptest.NewRequest(http.MethodGet, "/me", nil)
		r.Header.Set("Cookie", cookie)
		v := e.p.Authorize(r)
		if v.Outcome == idp.Unavailable {
			t.Fatalf("cookie %q: unavailable: %v", cookie, v.Err)
		}
		if v.Allowed() {
			for _, g := range genuine {
				if !strings.Contains(cookie, g) {
					t.Fatalf("cookie %q allowed without the genuine %q", cookie, g[:20])
				}
			}
		}
	})
}
