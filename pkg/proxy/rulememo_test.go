package proxy

import (
	"net/http"
	"net/url"
	"testing"
)

// The memo answers as ServeMux does: every request of a grid of methods,
// hosts and paths (with encoded forms, trailing slashes, excluded paths)
// gets matchIn's rule, the first time and from the memo, also after other
// requests have taken its slot; CONNECT and long paths are never kept.
func TestRuleMemoAgreesWithServeMux(t *testing.T) {
	rs, err := compileRules(realisticRoutes, PolicyAuthenticated, []string{"/favicon.ico"})
	if err != nil {
		t.Fatal(err)
	}
	long := "/" + string(make([]byte, ruleMemoMaxKey))
	var reqs []*http.Request
	for _, method := range []string{"GET", "HEAD", "POST", "DELETE", "PUT", "OPTIONS", "CONNECT"} {
		for _, host := range []string{"", "example.com", "internal.example.com", "internal.example.com:8443"} {
			for _, target := range []string{"/", "/health", "/health/", "/abc", "/abc/", "/shorten", "/admin", "/admin/",
				"/admin/stats", "/admin/x/y", "/api/v1/items/1/2", "/api/v1/items", "/static/a.css", "/favicon.ico",
				"/a%2Fb", "/%61dmin/", "/admin/%73tats", long} {
				u, err := url.Parse(target)
				if err != nil {
					u = &url.URL{Path: target}
				}
				reqs = append(reqs, &http.Request{Method: method, Host: host, URL: u})
			}
		}
	}
	for round := range 3 { // round 0 fills the memo, the others read it (and evict each other)
		for _, r := range reqs {
			want := rs.matchIn(rs.mux, rs.exclude, r)
			if got := rs.match(r); got != want {
				t.Fatalf("round %d: %s %s %s: memo gave %q, ServeMux %q", round, r.Method, r.Host, r.URL.Path, got.pattern, want.pattern)
			}
		}
	}
	for _, r := range reqs {
		e := rs.memo.slots.String(r.URL.Path).Load()
		if e != nil && (e.method == http.MethodConnect || e.path == long) {
			t.Fatalf("kept %s %q", e.method, e.path)
		}
	}
}
