package idp_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/internal/problem"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// TestRoutesDispatch pins which handler of the /auth routes answers each
// method and path: 404 problem+json for no route (an unclean path
// included: no redirect), 405 problem+json with Allow for a method the
// route does not serve (HEAD included), the route itself for the decoded
// path.
func TestRoutesDispatch(t *testing.T) {
	type answer struct {
		status int
		allow  string
		detail string // the problem's detail; "" for a route's own answer
	}
	notFound := answer{http.StatusNotFound, "", "no such authentication route"}
	use := func(methods string) answer {
		return answer{http.StatusMethodNotAllowed, methods, "method not allowed; use " + methods}
	}
	login := answer{status: http.StatusFound}
	common := []struct {
		method, target string
		want           answer
	}{
		{"GET", "/auth/nope", notFound},
		{"GET", "/auth", notFound},
		{"GET", "/auth/", notFound},
		{"GET", "/auth/login/", notFound},
		{"GET", "/auth//login", notFound},
		{"GET", "/auth/./login", notFound},
		{"GET", "/auth/x/../login", notFound},
		{"GET", "/other/login", notFound},
		{"GET", "/auth/login", login},
		{"GET", "/auth/%6Cogin", login},
		{"GET", "/auth%2Flogin", login},
		{"PUT", "/auth/login", use("GET")},
		{"HEAD", "/auth/login", use("GET")},
		{"get", "/auth/login", use("GET")},
		{"POST", "/auth/callback", use("GET")},
		{"GET", "/auth/refresh", use("POST")},
		{"HEAD", "/auth/refresh", use("POST")},
		{"PUT", "/auth/nope", notFound},
	}
	for _, tc := range []struct {
		name  string
		cfg   func(*idp.Config)
		extra []struct {
			method, target string
			want           answer
		}
	}{
		{"tokens", nil, []struct {
			method, target string
			want           answer
		}{
			{"GET", "/auth/logout", use("POST")},
			{"HEAD", "/auth/logout", use("POST")},
			{"POST", "/auth/backchannel-logout", notFound},
		}},
		{"sessions", func(c *idp.Config) { c.Session = &idp.SessionConfig{} }, []struct {
			method, target string
			want           answer
		}{
			{"DELETE", "/auth/logout", use("GET, POST")},
			{"HEAD", "/auth/logout", use("GET, POST")},
			{"GET", "/auth/backchannel-logout", use("POST")},
			{"HEAD", "/auth/backchannel-logout", use("POST")},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newFlowEnv(t, idptest.Options{}, tc.cfg)
			h := e.p.Routes()
			for _, c := range append(common, tc.extra...) {
				req := httptest.NewRequest(c.method, "http://app.example"+c.target, nil)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != c.want.status {
					t.Errorf("%s %s: status %d, want %d (%s)", c.method, c.target, rec.Code, c.want.status, rec.Body)
					continue
				}
				if got := rec.Header().Get("Allow"); got != c.want.allow {
					t.Errorf("%s %s: Allow %q, want %q", c.method, c.target, got, c.want.allow)
				}
				if c.want.detail == "" {
					continue
				}
				want := httptest.NewRecorder()
				problem.Write(want, c.want.status, c.want.detail)
				if rec.Body.String() != want.Body.String() {
					t.Errorf("%s %s: body %q, want %q", c.method, c.target, rec.Body, want.Body)
				}
				for _, k := range []string{"Content-Type", "Content-Length", "Cache-Control"} {
					if rec.Header().Get(k) != want.Header().Get(k) {
						t.Errorf("%s %s: %s %q, want %q", c.method, c.target, k, rec.Header().Get(k), want.Header().Get(k))
					}
				}
			}
			// A navigation gets the page, not the document.
			req := httptest.NewRequest("GET", "http://app.example/auth/nope", nil)
			req.Header.Set("Sec-Fetch-Mode", "navigate")
			req.Header.Set("Accept", "text/html")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusNotFound || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
				t.Errorf("navigation to no route: %d %q, want 404 text/html", rec.Code, rec.Header().Get("Content-Type"))
			}
			// The caller's mux pattern is left as it was.
			req = httptest.NewRequest("GET", "http://app.example/auth/nope", nil)
			req.Pattern = "/auth/"
			h.ServeHTTP(httptest.NewRecorder(), req)
			if req.Pattern != "/auth/" {
				t.Errorf("r.Pattern = %q after the routes, want the caller's %q", req.Pattern, "/auth/")
			}
		})
	}
}
