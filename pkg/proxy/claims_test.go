package proxy

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// With a generic claim mapping, rules judge the mapped roles and groups
// and the identity headers carry the mapped username.
func TestRulesAndHeadersWithClaimMapping(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	cfg := testConfig(idpSrv, up.URL)
	cfg.IDP.Claims = idp.ClaimMapping{Preset: idp.PresetGeneric, Username: "oid", Roles: "https://example.com/roles"}
	cfg.Routes = []RouteConfig{
		{Match: "/ops/", Groups: []string{"ops", "sre"}, Strategy: "any"},
		{Match: "/edit/", Roles: []string{"editor"}},
	}
	_, px := startProxy(t, cfg, Options{}, true)
	mint := func(extra map[string]any) string {
		c := map[string]any{"aud": "shortener", "typ": nil, "oid": "oid-7"}
		for k, v := range extra {
			c[k] = v
		}
		return idpSrv.Mint(c)
	}
	sre := mint(map[string]any{"groups": []any{"sre"}, "https://example.com/roles": []any{"editor"}})
	plain := mint(map[string]any{"groups": []any{"dev"}, "roles": []any{"editor"}})
	badShape := mint(map[string]any{"groups": "sre"})
	for _, tt := range []struct {
		name, path, token string
		want              int
	}{
		{"group held", "/ops/x", sre, 200},
		{"group not held", "/ops/x", plain, 403},
		{"groups of the wrong type", "/ops/x", badShape, 401},
		{"namespaced role held", "/edit/x", sre, 200},
		{"the unmapped roles claim is not read", "/edit/x", plain, 403},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := do(t, "GET", px.URL+tt.path, tt.token, nil, "")
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.want, body)
			}
		})
	}
	resp, _ := do(t, "GET", px.URL+"/ops/x", sre, nil, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatal(resp.Status)
	}
	if got := up.last(t).Header.Get(DefaultUsernameHeader); got != "oid-7" {
		t.Errorf("%s = %q, want the mapped username", DefaultUsernameHeader, got)
	}
}

// Rules on any claim and on e-mail domains: the 403 names the clause,
// Decide reports it, and claim headers reach the upstream (the client's
// copies, in any spelling, never do) and the forward-auth verdict.
func TestClaimRulesAndClaimHeaders(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	cfg := testConfig(idpSrv, up.URL)
	cfg.ForwardAuth = ForwardAuthConfig{Enabled: true, TrustedCIDRs: []string{"10.1.0.0/16"}}
	cfg.Routes = []RouteConfig{
		{Match: "/tenant/", Claims: map[string][]any{"tid": {"t1", "t2"}, "mfa": {true}}},
		{Match: "/either/", Claims: map[string][]any{"tid": {"t9"}, "level": {3}}, Strategy: "any"},
		{Match: "/staff/", EmailDomains: []string{"corp.example.com"}},
	}
	cfg.Headers.Claims = map[string]string{"X-Auth-Request-Tenant": "tid", "X-Auth-Request-Groups": "groups"}
	var logBuf syncBuffer
	p, px := startProxy(t, cfg, Options{AccessLog: slog.New(slog.NewJSONHandler(&logBuf, nil))}, true)
	mint := func(extra map[string]any) string {
		c := idpSrv.UserClaims("shortener", "alice")
		for k, v := range extra {
			c[k] = v
		}
		return idpSrv.Mint(c)
	}
	good := mint(map[string]any{"tid": "t2", "mfa": true, "level": 3.0, "groups": []any{"eng", "a,b"}, "email": "alice@corp.example.com"})
	noMFA := mint(map[string]any{"tid": "t1", "mfa": "true", "level": "3", "email": "alice@corp.example.com", "email_verified": false})
	for _, tc := range []struct {
		name, path, token string
		status            int
		clause            string
	}{
		{"claims all", "/tenant/x", good, 200, ""},
		{"claims: the string is not the boolean", "/tenant/x", noMFA, 403, "claims:mfa"},
		{"claims any: the number", "/either/x", good, 200, ""},
		{"claims any: none (the string is not the number)", "/either/x", noMFA, 403, "claims"},
		{"email domain", "/staff/x", good, 200, ""},
		{"email domain, not verified", "/staff/x", noMFA, 403, "email_domains"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, "GET", px.URL+tc.path, tc.token, nil, "")
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if tc.clause != "" && !strings.Contains(body, `"clause":"`+tc.clause+`"`) {
				t.Errorf("body %s does not name the clause %s", body, tc.clause)
			}
			if strings.Contains(body, "t1") || strings.Contains(body, "alice") {
				t.Errorf("the body leaks token content: %s", body)
			}
			d, err := p.Decide(t.Context(), "GET", tc.path, tc.token)
			wantStatus := tc.status
			if wantStatus == 200 {
				wantStatus = 0 // forwarded
			}
			if err != nil || d.Status != wantStatus || d.Clause != tc.clause {
				t.Errorf("Decide = %+v, %v; want status %d, clause %q", d, err, tc.status, tc.clause)
			}
		})
	}
	// The access log names the clause of a refusal, and only then.
	var clauses []string
	for _, line := range strings.Split(strings.TrimSpace(logBuf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		c, _ := rec["clause"].(string)
		clauses = append(clauses, c)
	}
	if want := []string{"", "claims:mfa", "", "claims", "", "email_domains"}; !slices.Equal(clauses, want) {
		t.Errorf("access log clauses %q, want %q", clauses, want)
	}
	resp, body := do(t, "GET", px.URL+"/tenant/x", good, map[string]string{
		"X-Auth-Request-Tenant": "spoofed", "X_Auth_Request_Tenant": "spoofed", "x-auth-request-groups": "admins",
	}, "")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	got := up.last(t).Header
	if v := got.Values("X-Auth-Request-Tenant"); len(v) != 1 || v[0] != "t2" {
		t.Errorf("X-Auth-Request-Tenant %q, want [t2]", v)
	}
	if v := got.Values("X-Auth-Request-Groups"); len(v) != 1 || v[0] != "eng,"+encodedWord("a,b") {
		t.Errorf("X-Auth-Request-Groups %q", v)
	}
	for k, v := range got {
		if foldName(k) == "x-auth-request-tenant" && k != "X-Auth-Request-Tenant" {
			t.Errorf("the client's %s reached the upstream: %q", k, v)
		}
	}
	// A token without the claim: the client's header is stripped, none set.
	resp, _ = do(t, "GET", px.URL+"/other", mint(nil), map[string]string{"X-Auth-Request-Tenant": "spoofed"}, "")
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	if v, ok := up.last(t).Header["X-Auth-Request-Tenant"]; ok {
		t.Errorf("X-Auth-Request-Tenant %q without the claim", v)
	}
	// Forward-auth verdicts carry the same headers; empty without identity.
	w := httptest.NewRecorder()
	p.ServeHTTP(w, verifyReq("/auth/verify", "10.1.2.3:1", map[string]string{"X-Original-URI": "/tenant/x", "Authorization": "Bearer " + good}))
	if w.Code != 200 || w.Header().Get("X-Auth-Request-Tenant") != "t2" {
		t.Errorf("verdict %d, tenant %q", w.Code, w.Header().Get("X-Auth-Request-Tenant"))
	}
	w = httptest.NewRecorder()
	p.ServeHTTP(w, verifyReq("/auth/verify", "10.1.2.3:1", map[string]string{"X-Original-URI": "/tenant/x", "Authorization": "Bearer " + noMFA}))
	if w.Code != 403 || !strings.Contains(w.Body.String(), `"clause":"claims:mfa"`) {
		t.Errorf("verdict %d %s, want 403 naming claims:mfa", w.Code, w.Body)
	}
}

func TestClaimRulesAndHeadersRefusedAtLoad(t *testing.T) {
	idpSrv := newProvider(t)
	for _, tc := range []struct {
		name string
		mod  func(*testSetup)
		says string
	}{
		{"bad path", func(c *testSetup) { c.Routes = []RouteConfig{{Match: "/x/", Claims: map[string][]any{"a..b": {"x"}}}} }, "empty name"},
		{"no values", func(c *testSetup) { c.Routes = []RouteConfig{{Match: "/x/", Claims: map[string][]any{"tid": {}}}} }, "no accepted values"},
		{"object value", func(c *testSetup) {
			c.Routes = []RouteConfig{{Match: "/x/", Claims: map[string][]any{"tid": {map[string]any{}}}}}
		}, "want a string, bool or number"},
		{"public with claims", func(c *testSetup) {
			c.Routes = []RouteConfig{{Match: "/x/", Public: true, Claims: map[string][]any{"tid": {"x"}}}}
		}, "Public excludes"},
		{"bad domain", func(c *testSetup) { c.Routes = []RouteConfig{{Match: "/x/", EmailDomains: []string{"*.example.com"}}} }, "no wildcards"},
		{"hop-by-hop header", func(c *testSetup) { c.Headers.Claims = map[string]string{"Transfer-Encoding": "tid"} }, "hop-by-hop"},
		{"proxy's own header", func(c *testSetup) { c.Headers.Claims = map[string]string{"x_request_id": "tid"} }, "set by the proxy"},
		{"identity header", func(c *testSetup) { c.Headers.Claims = map[string]string{"x-auth-request-user": "tid"} }, "same header as Headers.User"},
		{"content-length", func(c *testSetup) { c.Headers.Claims = map[string]string{"Content-Length": "tid"} }, "frames"},
		{"two spellings", func(c *testSetup) { c.Headers.Claims = map[string]string{"X-Tenant": "tid", "x_tenant": "tid"} }, "same header"},
		{"bad header name", func(c *testSetup) { c.Headers.Claims = map[string]string{"X Tenant": "tid"} }, "not a valid header name"},
		{"bad header path", func(c *testSetup) { c.Headers.Claims = map[string]string{"X-Tenant": "a b"} }, "in a name"},
		{"no header path", func(c *testSetup) { c.Headers.Claims = map[string]string{"X-Tenant": ""} }, "names no claim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(idpSrv, "http://127.0.0.1:1")
			tc.mod(&cfg)
			_, err := newProxy(t, cfg, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err %v, want it to say %q", err, tc.says)
			}
		})
	}
}

// A claim named twice makes the token invalid (401) whatever reads it: a
// claims rule (before: 403 from the rule, or 200 with strategy any when
// another clause matched), a claim header (before: forwarded with 200 and
// the header dropped), a forward-auth verdict; the upstream never sees
// the request.
func TestDuplicateClaimIsInvalidToken(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	cfg := testConfig(idpSrv, up.URL)
	cfg.ForwardAuth = ForwardAuthConfig{Enabled: true, TrustedCIDRs: []string{"10.1.0.0/16"}}
	cfg.Routes = []RouteConfig{
		{Match: "/tenant/", Claims: map[string][]any{"tid": {"A"}}},
		{Match: "/either/", Claims: map[string][]any{"tid": {"A"}, "dept": {"eng"}}, Strategy: "any"},
	}
	cfg.Headers.Claims = map[string]string{"X-Auth-Request-Oid": "oid"}
	p, px := startProxy(t, cfg, Options{}, true)
	payload := func(extra string) string {
		return fmt.Sprintf(`{"iss":%q,"sub":"u-1","aud":"shortener","azp":"shortener","typ":"Bearer","exp":%d%s}`,
			idpSrv.Issuer, time.Now().Add(time.Hour).Unix(), extra)
	}
	tidTwice := idpSrv.MintJSON(idptest.MintOptions{}, payload(`,"tid":"B","tid":"A"`))
	tidTwiceDept := idpSrv.MintJSON(idptest.MintOptions{}, payload(`,"dept":"eng","tid":"B","tid":"A"`))
	oidTwice := idpSrv.MintJSON(idptest.MintOptions{}, payload(`,"oid":"1","oid":"2"`))
	for _, tc := range []struct{ name, path, token string }{
		{"claims rule", "/tenant/x", tidTwice},
		{"claims rule, strategy any, the other clause matches", "/either/x", tidTwiceDept},
		{"claim header", "/other", oidTwice},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, "GET", px.URL+tc.path, tc.token, nil, "")
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) ||
				!strings.Contains(body, "duplicate claim") {
				t.Fatalf("%d %q %s, want 401 invalid_token naming the duplicate claim", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
			}
			w := httptest.NewRecorder()
			p.ServeHTTP(w, verifyReq("/auth/verify", "10.1.2.3:1", map[string]string{"X-Original-URI": tc.path, "Authorization": "Bearer " + tc.token}))
			if w.Code != http.StatusUnauthorized || w.Header().Get("X-Auth-Request-Oid") != "" {
				t.Fatalf("forward-auth verdict %d (oid %q), want 401", w.Code, w.Header().Get("X-Auth-Request-Oid"))
			}
			if d, err := p.Decide(t.Context(), "GET", tc.path, tc.token); err != nil || d.Status != http.StatusUnauthorized {
				t.Fatalf("Decide = %+v, %v; want 401", d, err)
			}
		})
	}
	if n := up.count(); n != 0 {
		t.Fatalf("the upstream received %d requests carrying a duplicate claim", n)
	}
	// Once each: served, with the claim header.
	resp, body := do(t, "GET", px.URL+"/either/x", idpSrv.MintJSON(idptest.MintOptions{}, payload(`,"tid":"A","oid":"1"`)), nil, "")
	if resp.StatusCode != 200 || up.last(t).Header.Get("X-Auth-Request-Oid") != "1" {
		t.Fatalf("%d %s, oid %q", resp.StatusCode, body, up.last(t).Header.Get("X-Auth-Request-Oid"))
	}
}
