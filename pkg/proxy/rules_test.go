package proxy

import (
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
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

func TestRuleTableGolden(t *testing.T) {
	c, err := Load(examplePath, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.IDP.ExcludedPaths = []string{"/robots.txt"}
	got, err := Check(c)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "ruletable.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestRuleTableGolden -update)", err)
	}
	if got != string(want) {
		t.Errorf("rule table changed:\n%s\nwant:\n%s", got, want)
	}
}
