package proxy

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDecisionsGolden runs a table of requests (method, target, token)
// through the realistic rules and compares status, rule and decision with
// testdata/decisions.golden. Run with -update after a deliberate change.
func TestDecisionsGolden(t *testing.T) {
	idpSrv := newProvider(t)
	tr := &countingTransport{}
	cfg := testConfig(idpSrv, "http://upstream.invalid")
	cfg.IDP.ExcludedPaths = []string{"/favicon.ico"}
	p, err := newProxy(t, cfg, Options{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Plugin().WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	scoped := idpSrv.UserClaims("shortener", "erin")
	scoped["scope"] = "openid stats:read"
	editor := idpSrv.UserClaims("shortener", "dave")
	editor["resource_access"] = map[string]any{"shortener": map[string]any{"roles": []any{"editor"}}}
	tokens := map[string]string{
		"-":       "",
		"plain":   idpSrv.Mint(idpSrv.UserClaims("shortener", "bob")),
		"creator": idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator")),
		"ops":     idpSrv.Mint(idpSrv.UserClaims("shortener", "carol", "ops")),
		"editor":  idpSrv.Mint(editor),
		"scoped":  idpSrv.Mint(scoped),
		"service": idpSrv.Mint(idpSrv.ServiceClaims(svcReporter)),
		"foreign": idpSrv.Mint(idpSrv.UserClaims("other-app", "mallory", "creator", "admin")),
		"garbage": "abc.def.ghi",
	}
	table := []string{
		"GET /health -", "HEAD /health -", "POST /health -", "POST /health plain",
		"GET /abc1234 -", "GET /abc1234 garbage", "GET /abc1234?next=/admin/ -",
		"POST /shorten -", "POST /shorten garbage", "POST /shorten foreign", "POST /shorten plain",
		"POST /shorten creator", "POST /shorten service",
		"DELETE /abc1234 creator", "DELETE /abc1234 editor",
		"GET /admin/ creator", "GET /admin/ ops", "POST /admin ops", "GET /admin ops",
		"GET /admin/stats ops", "GET /admin/stats scoped", "HEAD /admin/stats scoped",
		"GET /api/v1/items/a/b plain", "GET /api/v1/items/a/b -",
		"GET /favicon.ico -", "GET /no/rule -", "GET /no/rule plain", "PUT /abc1234 -",
		"GET /health/../admin/ ops", "GET /admin%2Fx ops", "GET //admin/ ops", "GET /x;y=1 -",
		"TRACE /health -",
	}
	var b strings.Builder
	for _, line := range table {
		f := strings.Fields(line)
		r := httptest.NewRequest(f[0], f[1], nil)
		if tok := tokens[f[2]]; tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		rec := httptest.NewRecorder()
		before := tr.n.Load()
		v := p.serve(rec, r)
		rl, dec := v.rule, v.dec
		fwd := "-"
		if tr.n.Load() > before {
			fwd = "forwarded"
		}
		fmt.Fprintf(&b, "%-36s → %d %-13s %-9s %s\n", line, rec.Code, dec, fwd, rl.label)

		// Decide reaches the same verdict for the same request.
		d, err := p.Decide(t.Context(), f[0], f[1], tokens[f[2]])
		wantStatus := rec.Code
		if fwd == "forwarded" {
			wantStatus = 0
		}
		if err != nil || d.Rule != rl.label || d.Decision != dec.String() || d.Status != wantStatus {
			t.Errorf("%s: Decide = %+v, %v; ServeHTTP: %d %s %s", line, d, err, wantStatus, dec, rl.label)
		}
	}
	got := b.String()
	golden := filepath.Join("testdata", "decisions.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestDecisionsGolden -update)", err)
	}
	if got != string(want) {
		t.Errorf("decisions changed:\n%s\nwant:\n%s", got, want)
	}
}

func TestDecide(t *testing.T) {
	idpSrv := newProvider(t)
	tr := &countingTransport{}
	p, err := newProxy(t, testConfig(idpSrv, "http://upstream.invalid"), Options{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Plugin().WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	creator := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	plain := idpSrv.Mint(idpSrv.UserClaims("shortener", "bob"))
	tests := []struct {
		method, target, token string
		want                  Decision
	}{
		{"POST", "/shorten", creator, Decision{Rule: "POST /shorten", Decision: "allowed", User: "user-alice"}},
		{"POST", "/shorten", plain, Decision{Rule: "POST /shorten", Decision: "forbidden", Status: 403, User: "user-bob", Clause: "roles"}},
		{"POST", "/shorten", "", Decision{Rule: "POST /shorten", Decision: "no_token", Status: 401}},
		{"GET", "/abc?x=1", "", Decision{Rule: "GET /{code}", Decision: "public"}},
		{"GET", "/a/../b", "", Decision{Rule: "(invalid)", Decision: "bad_request", Status: 400}},
	}
	for _, tt := range tests {
		got, err := p.Decide(t.Context(), tt.method, tt.target, tt.token)
		if err != nil || got != tt.want {
			t.Errorf("Decide(%s %s) = %+v, %v; want %+v", tt.method, tt.target, got, err, tt.want)
		}
	}
	for _, bad := range []string{"no-slash", "https://user@example.com/x", "https:///x", "ftp://example.com/x", "https://example.com/x#frag"} {
		if _, err := p.Decide(t.Context(), "GET", bad, ""); err == nil {
			t.Errorf("target %q accepted", bad)
		}
	}
	// An absolute URL is judged on its host, canonicalised as ServeHTTP
	// canonicalises Host.
	hosted, err := compileRules([]RouteConfig{{Match: "GET api.example.com/x", Roles: []string{"admin"}}, {Match: "GET /x", Public: true}}, PolicyAuthenticated, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.rules = hosted
	for target, want := range map[string]string{
		"https://API.Example.com./x": "forbidden", "http://api.example.com:8443/x": "forbidden",
		"https://other.example.com/x": "public", "/x": "public",
	} {
		if d, err := p.Decide(t.Context(), "GET", target, plain); err != nil || d.Decision != want {
			t.Errorf("Decide(GET %s) = %+v, %v; want %s", target, d, err, want)
		}
	}
	if tr.n.Load() != 0 {
		t.Error("Decide forwarded a request")
	}
}
