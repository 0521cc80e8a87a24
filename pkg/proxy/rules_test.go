package proxy

import (
	"flag"
	"net/http/httptest"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// realisticRoutes protect the shortener and an admin area.
var realisticRoutes = []RouteConfig{
	{Match: "GET /health", Public: true},
	{Match: "GET /{code}", Public: true},
	{Match: "POST /shorten", Roles: []string{"creator"}},
	{Match: "DELETE /{code}", ClientRoles: map[string][]string{"shortener": {"editor"}}},
	{Match: "/admin/", Roles: []string{"admin", "ops"}, Strategy: "any"},
	{Match: "GET /admin/stats", Scopes: []string{"stats:read"}},
	{Match: "GET /api/{version}/items/{id...}"},
	{Match: "internal.example.com/", Roles: []string{"internal"}},
	{Match: "GET /static/", Public: true},
}

func TestRuleTableDecisions(t *testing.T) {
	for _, pol := range []string{PolicyAuthenticated, PolicyDeny} {
		rs, err := compileRules(realisticRoutes, pol, []string{"/favicon.ico"})
		if err != nil {
			t.Fatal(err)
		}
		def := "(default:" + pol + ")"
		tests := []struct {
			method, host, path string
			want               string // pattern of the rule, or def
		}{
			{"GET", "", "/health", "GET /health"},
			{"HEAD", "", "/health", "GET /health"}, // HEAD follows GET
			{"POST", "", "/health", def},           // method not covered
			{"GET", "", "/abc123", "GET /{code}"},
			{"HEAD", "", "/abc123", "GET /{code}"},
			{"DELETE", "", "/abc123", "DELETE /{code}"},
			{"PUT", "", "/abc123", def},
			{"POST", "", "/shorten", "POST /shorten"},
			{"GET", "", "/shorten", "GET /{code}"}, // a code, as the shortener reads it
			{"GET", "", "/admin/", "/admin/"},
			{"POST", "", "/admin/users/7", "/admin/"},
			{"GET", "", "/admin", "GET /{code}"}, // ServeMux precedence: an exact single segment
			{"POST", "", "/admin", "/admin/"},    // judged by the subtree ServeMux redirects it to
			{"GET", "", "/admin/stats", "GET /admin/stats"},
			{"HEAD", "", "/admin/stats", "GET /admin/stats"},
			{"POST", "", "/admin/stats", "/admin/"},
			{"GET", "", "/admin/stats/x", "/admin/"},
			{"GET", "", "/api/v1/items/a/b/c", "GET /api/{version}/items/{id...}"},
			{"GET", "", "/api/v1/items", def},
			{"GET", "internal.example.com", "/anything/at/all", "internal.example.com/"},
			{"GET", "internal.example.com:8443", "/abc", "internal.example.com/"}, // host patterns win
			{"GET", "", "/static/app.js", "GET /static/"},
			{"GET", "", "/a/b", def},
			{"GET", "", "/", def},
			{"GET", "", "/favicon.ico", "/favicon.ico"}, // excluded path
			{"POST", "", "/favicon.ico", "/favicon.ico"},
			{"GET", "", "/favicon.ico/", def},   // exact match only
			{"GET", "", "/%61dmin/", "/admin/"}, // matched decoded
			{"GET", "", "/caf%C3%A9", "GET /{code}"},
		}
		for _, tt := range tests {
			target := tt.path
			r := httptest.NewRequest(tt.method, target, nil)
			if tt.host != "" {
				r.Host = tt.host
			}
			got := rs.match(r)
			name := got.pattern
			if got == rs.def {
				name = "(default:" + pol + ")"
			}
			if name != tt.want {
				t.Errorf("%s: %s %s%s → %s, want %s", pol, tt.method, tt.host, tt.path, name, tt.want)
			}
		}
		if rs.def.policy != map[string]policy{PolicyAuthenticated: policyAuthenticated, PolicyDeny: policyDeny}[pol] {
			t.Errorf("default rule policy = %v for %s", rs.def.policy, pol)
		}
	}
}

func TestRulePolicies(t *testing.T) {
	rs, err := compileRules(realisticRoutes, PolicyAuthenticated, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		p      policy
		guards int
	}{
		"GET /health":                      {policyPublic, 0},
		"POST /shorten":                    {policyAuthenticated, 1},
		"DELETE /{code}":                   {policyAuthenticated, 1},
		"/admin/":                          {policyAuthenticated, 1},
		"GET /api/{version}/items/{id...}": {policyAuthenticated, 0},
	}
	for _, r := range rs.rules {
		w, ok := want[r.pattern]
		if !ok {
			continue
		}
		if r.policy != w.p || len(r.guards) != w.guards {
			t.Errorf("%s: policy %v with %d guards, want %v with %d", r.pattern, r.policy, len(r.guards), w.p, w.guards)
		}
	}
}

// A rule that can never match a request the proxy judges would leave its
// requests to the default policy without a word: it is a load error.
func TestRulesThatNeverMatchAreErrors(t *testing.T) {
	for _, tc := range []struct{ match, want string }{
		{"post /shorten", `method "post": methods are case-sensitive`},
		{"Get /x", `write "GET"`},
		{"CONNECT /x", "always refused"},
		{"TRACE example.com/", "always refused"},
		{"GET /a/../b", "refused before any rule"},
		{"GET /a/./b", "refused before any rule"},
		{"GET /a//b", "refused before any rule"},
		{"GET /a;b", "refused before any rule"},
		{"/a%2Fb", "refused before any rule"},
		{"GET Example.com./x", `write the host "example.com." as "example.com"`},
		{"GET example.com:8080/zz", `host "example.com:8080" has a port`},
		{"[::1]:8080/zz", `has a port`},
	} {
		_, err := compileRules([]RouteConfig{{Match: tc.match, Public: true}}, PolicyAuthenticated, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.match, err, tc.want)
		}
	}
	for _, ok := range []string{"GET /{code}", "/api/{version}/items/{id...}", "GET /static/", "PROPFIND /dav/", "M-SEARCH /", "/", "GET /{$}", "GET [::1]/x"} {
		if _, err := compileRules([]RouteConfig{{Match: ok, Public: true}}, PolicyAuthenticated, nil); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	// A rule on a path that idp.excluded_paths already serves publicly
	// could never apply.
	excluded := []string{"/health", "/admin/open"}
	_, err := compileRules([]RouteConfig{{Match: "GET /health", Roles: []string{"ops"}}}, PolicyAuthenticated, excluded)
	if err == nil || !strings.Contains(err.Error(), "is in IDP.ExcludedPaths") {
		t.Errorf("rule on an excluded path: err = %v", err)
	}
	// Wildcards and subtrees that merely contain an excluded path are the
	// exceptions excluded_paths are for.
	if _, err := compileRules([]RouteConfig{{Match: "/admin/", Roles: []string{"ops"}}, {Match: "GET /{code}", Public: true}}, PolicyAuthenticated, excluded); err != nil {
		t.Errorf("subtree and wildcard rules around excluded paths refused: %v", err)
	}
}
