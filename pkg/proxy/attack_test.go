package proxy

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/problem"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// TestMethodCaseCannotDodgeRules: rules match methods case-sensitively,
// but many upstreams upper-case them, so "post /shorten" must not be
// judged by another rule than "POST /shorten".
func TestMethodCaseCannotDodgeRules(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	_, px := startProxy(t, testConfig(idpSrv, up.URL), Options{}, true)
	bob := idpSrv.Mint(idpSrv.UserClaims("shortener", "bob")) // valid, without the creator role
	for _, m := range []string{"post", "Post", "pOST", "get", "delete"} {
		resp, body := do(t, m, px.URL+"/shorten", bob, nil, "")
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Content-Type") != problem.ContentType {
			t.Errorf("%s /shorten: %d %s, want 405 problem+json", m, resp.StatusCode, body)
		}
	}
	if n := up.count(); n != 0 {
		t.Fatalf("%d requests with lower-case methods reached the upstream", n)
	}
	// Upper-case extension methods are judged by the rules as before.
	if resp, _ := do(t, "PROPFIND", px.URL+"/shorten", bob, nil, ""); resp.StatusCode != 200 {
		t.Errorf("PROPFIND (default policy, valid token): %d, want 200", resp.StatusCode)
	}
}

// TestHostRulesMatchEverySpelling: host names are case-insensitive and
// "host." is "host"; a host rule must hold for every spelling the
// upstream may route by (X-Forwarded-Host), and the upstream sees the
// spelling that was judged.
func TestHostRulesMatchEverySpelling(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	p, _ := startProxy(t, testConfig(idpSrv, up.URL), Options{}, true)
	bob := idpSrv.Mint(idpSrv.UserClaims("shortener", "bob"))             // no "internal" role
	ida := idpSrv.Mint(idpSrv.UserClaims("shortener", "ida", "internal")) // has it
	for _, host := range []string{
		"internal.example.com", "INTERNAL.example.com", "Internal.Example.Com:8080",
		"internal.example.com.", "internal.example.com..:80", "INTERNAL.EXAMPLE.COM.",
	} {
		for _, tc := range []struct {
			tok  string
			want int
		}{{bob, http.StatusForbidden}, {ida, http.StatusOK}} {
			r := httptest.NewRequest("GET", "/x", nil)
			r.Host = host
			r.Header.Set("Authorization", "Bearer "+tc.tok)
			rec := httptest.NewRecorder()
			before := up.count()
			p.ServeHTTP(rec, r)
			if rec.Code != tc.want {
				t.Errorf("Host %q: %d %s, want %d", host, rec.Code, rec.Body, tc.want)
				continue
			}
			if tc.want == http.StatusOK {
				got := up.last(t).Header.Get("X-Forwarded-Host")
				if got != "internal.example.com" && got != "internal.example.com:8080" && got != "internal.example.com:80" {
					t.Errorf("Host %q forwarded as X-Forwarded-Host %q", host, got)
				}
			} else if up.count() != before {
				t.Errorf("Host %q: refused request reached the upstream", host)
			}
		}
	}
}

func TestCanonicalHost(t *testing.T) {
	for in, want := range map[string]string{
		"":                 "",
		"example.com":      "example.com",
		"Example.COM:8443": "example.com:8443",
		"example.com.":     "example.com",
		"example.com.:80":  "example.com:80",
		"[::1]:8080":       "[::1]:8080",
		"[FE80::1]":        "[fe80::1]",
		"127.0.0.1":        "127.0.0.1",
		"a.B.c..":          "a.b.c",
	} {
		if got := canonicalHost(in); got != want {
			t.Errorf("canonicalHost(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestUnverifiedEmailIsNotForwarded: the proxy vouches only for an email
// the provider has verified; otherwise a user who sets their address to
// someone else's would be that someone to an upstream keyed on email.
func TestUnverifiedEmailIsNotForwarded(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	_, px := startProxy(t, testConfig(idpSrv, up.URL), Options{}, true)
	for _, tc := range []struct {
		verified any // nil: claim absent
		want     string
	}{
		{true, "ceo@example.com"},
		{false, ""},
		{nil, ""},
		{"true", ""},
		{1, ""},
	} {
		claims := idpSrv.UserClaims("shortener", "mallory", "creator")
		claims["email"] = "ceo@example.com"
		if tc.verified == nil {
			delete(claims, "email_verified")
		} else {
			claims["email_verified"] = tc.verified
		}
		resp, body := do(t, "POST", px.URL+"/shorten", idpSrv.Mint(claims), nil, "")
		if resp.StatusCode != 200 {
			t.Fatalf("email_verified %v: %d %s", tc.verified, resp.StatusCode, body)
		}
		got := up.last(t).Header
		if v := got.Get("X-Auth-Request-Email"); v != tc.want {
			t.Errorf("email_verified %#v: X-Auth-Request-Email %q, want %q", tc.verified, v, tc.want)
		}
		if got.Get("X-Auth-Request-User") != "user-mallory" {
			t.Errorf("email_verified %#v: identity not forwarded: %v", tc.verified, got)
		}
	}
}

// TestCaseVariantsCannotDodgeRules: Express and ASP.NET Core match paths
// case-insensitively by default, so "/ADMIN/users" must not be judged by
// the default rule while "/admin/" protects it.
func TestCaseVariantsCannotDodgeRules(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	cfg := testConfig(idpSrv, up.URL)
	cfg.IDP.ExcludedPaths = []string{"/favicon.ico"}
	_, px := startProxy(t, cfg, Options{}, true)
	bob := idpSrv.Mint(idpSrv.UserClaims("shortener", "bob")) // no admin, ops or creator role
	for _, tc := range []struct {
		method, path string
	}{
		{"GET", "/ADMIN/users"},
		{"POST", "/Admin/users/7"},
		{"POST", "/SHORTEN"},         // default rule here, "POST /shorten" once folded
		{"GET", "/%41dmin/users"},    // encoded 'A'
		{"GET", "/caf%C3%89/../x"},   // (rejected earlier: dot segment)
		{"GET", "/FAVICON.ICO"},      // excluded path, folded
		{"GET", "/adm%C4%B1n/users"}, // dotless i: "ADMIN" to .NET's OrdinalIgnoreCase
		{"POST", "/%C5%BFhorten"},    // long s: "SHORTEN" likewise
		{"GET", "/Static/../admin/"}, // (rejected earlier)
	} {
		resp, body := do(t, tc.method, px.URL+tc.path, bob, nil, "")
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != problem.ContentType {
			t.Errorf("%s %s: %d %s, want 400 problem+json", tc.method, tc.path, resp.StatusCode, body)
		}
	}
	if n := up.count(); n != 0 {
		t.Fatalf("%d case variants reached the upstream", n)
	}
	// Case that changes no rule passes: wildcard values, paths no rule
	// names, and the exact spellings of the rules.
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/AbC123", 200},       // GET /{code}, public
		{"GET", "/caf%C3%A9/x", 200},  // non-ASCII that folds to no rule
		{"GET", "/No/Rule/Here", 200}, // default either way
		{"GET", "/api/v1/items/A/B", 200},
		{"GET", "/admin/users", 403},
		{"POST", "/shorten", 403},
	} {
		if resp, body := do(t, tc.method, px.URL+tc.path, bob, nil, ""); resp.StatusCode != tc.want {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, resp.StatusCode, body, tc.want)
		}
	}
}

func TestCaseOnlyConflictsAreConfigErrors(t *testing.T) {
	_, err := compileRules([]RouteConfig{
		{Match: "GET /Reports/", Roles: []string{"a"}},
		{Match: "GET /reports/", Public: true},
	}, PolicyAuthenticated, nil)
	if err == nil || !strings.Contains(err.Error(), "letter case") {
		t.Fatalf("rules differing only in case: err = %v", err)
	}
	// Hosts are judged lower-case without a trailing dot: a pattern with
	// a trailing dot could never match and is an error; one in capitals
	// is the same host (host names are case-insensitive).
	for _, m := range []string{"GET internal.example.com./x", "Internal.Example.com./"} {
		if _, err := compileRules([]RouteConfig{{Match: m}}, PolicyAuthenticated, nil); err == nil || !strings.Contains(err.Error(), "write the host") {
			t.Errorf("%q: err = %v, want a host spelling error", m, err)
		}
	}
	for _, m := range []string{"Internal.example.com/", "POST  API.example.com/x"} {
		if _, err := compileRules([]RouteConfig{{Match: m}}, PolicyAuthenticated, nil); err != nil {
			t.Errorf("%q: %v, want the host in lower case", m, err)
		}
	}
	// ServeMux matches host patterns against the host without its port: a
	// pattern with a port could never match (it was accepted before).
	if _, err := compileRules([]RouteConfig{{Match: "GET internal.example.com:8080/X"}}, PolicyAuthenticated, nil); err == nil || !strings.Contains(err.Error(), "has a port") {
		t.Errorf("host with a port: err = %v, want a config error", err)
	}
	if _, err := compileRules([]RouteConfig{{Match: "GET internal.example.com/X"}}, PolicyAuthenticated, nil); err != nil {
		t.Errorf("lower-case host: %v", err)
	}
	// A pattern with upper-case letters guards its lower-case spelling too.
	rs, err := compileRules([]RouteConfig{{Match: "GET /Reports/", Roles: []string{"a"}}}, PolicyAuthenticated, nil)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{"/Reports/x": true, "/reports/x": false, "/REPORTS/": false, "/other": true} {
		r := httptest.NewRequest("GET", path, nil)
		if got := rs.caseSafe(r, rs.match(r)); got != want {
			t.Errorf("caseSafe(%s) = %v, want %v", path, got, want)
		}
	}
}

// TestCookieModeRefusesCrossOriginWrites: in COOKIE mode the browser
// attaches the token by itself and the proxy forwards it as a bearer
// token, so a cross-origin POST (from a sibling subdomain, which
// SameSite=Lax lets through) must not act with the user's identity.
func TestCookieModeRefusesCrossOriginWrites(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	cfg := testConfig(idpSrv, up.URL)
	cfg.IDP.TokenLocation = "cookie"
	cfg.IDP.CookieName = "at"
	cfg.Routes = append(append([]RouteConfig(nil), cfg.Routes...), RouteConfig{Match: "POST /hook", Public: true})
	_, px := startProxy(t, cfg, Options{}, true)
	alice := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	cookie := "at=" + alice
	for _, tc := range []struct {
		name, method, path string
		hdr                map[string]string
		want               int
		user               string // X-Auth-Request-User the upstream sees
	}{
		{"same-site POST", "POST", "/shorten", map[string]string{"Sec-Fetch-Site": "same-site"}, 403, ""},
		{"cross-site POST", "POST", "/shorten", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, ""},
		{"foreign Origin, no Sec-Fetch-Site", "POST", "/shorten", map[string]string{"Origin": "http://evil.example"}, 403, ""},
		{"same-origin POST", "POST", "/shorten", map[string]string{"Sec-Fetch-Site": "same-origin"}, 200, "user-alice"},
		{"non-browser POST", "POST", "/shorten", nil, 200, "user-alice"},
		{"cross-site GET (safe)", "GET", "/api/v1/items/1", map[string]string{"Sec-Fetch-Site": "cross-site"}, 200, "user-alice"},
		{"cross-site POST to a public route", "POST", "/hook", map[string]string{"Sec-Fetch-Site": "same-site"}, 200, ""},
	} {
		hdr := map[string]string{"Cookie": cookie}
		for k, v := range tc.hdr {
			hdr[k] = v
		}
		before := up.count()
		resp, body := do(t, tc.method, px.URL+tc.path, "", hdr, "")
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, body, tc.want)
			continue
		}
		if tc.want != 200 {
			if up.count() != before {
				t.Errorf("%s: refused request reached the upstream", tc.name)
			}
			continue
		}
		got := up.last(t).Header
		if got.Get("X-Auth-Request-User") != tc.user || (tc.user == "" && got.Get("Authorization") != "") {
			t.Errorf("%s: upstream identity %q (Authorization sent: %v), want %q", tc.name, got.Get("X-Auth-Request-User"), got.Get("Authorization") != "", tc.user)
		}
	}
	// HEADER mode is unaffected: a bearer header is never ambient.
	cfg.IDP.TokenLocation = "header"
	_, px2 := startProxy(t, cfg, Options{}, true)
	if resp, body := do(t, "POST", px2.URL+"/shorten", alice, map[string]string{"Sec-Fetch-Site": "cross-site"}, ""); resp.StatusCode != 200 {
		t.Errorf("header mode, cross-site POST: %d %s", resp.StatusCode, body)
	}
}

// rawStatus writes req on a fresh connection to addr and returns the
// response's status code.
func rawStatus(t *testing.T, addr, req string) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: %v", req, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestMalformedRequestsAre4xx: hostile request forms through a real
// server get a 4xx (from net/http or the proxy), never a 5xx, and never
// reach the upstream.
func TestMalformedRequestsAre4xx(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	_, px := startProxy(t, testConfig(idpSrv, up.URL), Options{}, true)
	addr := px.Listener.Addr().String()
	bob := idpSrv.Mint(idpSrv.UserClaims("shortener", "bob"))
	hugeKID := idpSrv.MintWith(idptest.MintOptions{KID: strings.Repeat("../", 3000)}, idpSrv.UserClaims("shortener", "bob"))
	sqlKID := idpSrv.MintWith(idptest.MintOptions{KID: "' OR 1=1 --"}, idpSrv.UserClaims("shortener", "bob"))
	for _, tc := range []struct{ name, req string }{
		{"absolute-form to a protected path", "POST http://evil.example/shorten HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"asterisk with GET", "GET * HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"CONNECT", "CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n"},
		{"lower-case method", "post /shorten HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + bob + "\r\n\r\n"},
		{"two Authorization headers", "POST /shorten HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + bob + "\r\nAuthorization: Bearer " + bob + "\r\n\r\n"},
		{"tab after Bearer", "POST /shorten HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer\t" + bob + "\r\n\r\n"},
		{"huge path-traversal kid", "POST /shorten HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + hugeKID + "\r\n\r\n"},
		{"SQL-ish kid", "POST /shorten HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + sqlKID + "\r\n\r\n"},
		{"garbage token", "POST /shorten HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a.b.c\r\n\r\n"},
		{"token with a NUL byte", "POST /shorten HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\x00b\r\n\r\n"},
		{"space before the colon", "POST /shorten HTTP/1.1\r\nHost: x\r\nX-Auth-Request-User : admin\r\n\r\n"},
		{"obsolete line folding", "POST /shorten HTTP/1.1\r\nHost: x\r\nX-Foo: a\r\n X-Auth-Request-User: admin\r\n\r\n"},
		{"Content-Length and Transfer-Encoding", "POST /shorten HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"two Content-Lengths", "POST /shorten HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"},
		{"bad Host", "GET /health HTTP/1.1\r\nHost: a b\r\n\r\n"},
		{"no Host", "GET /health HTTP/1.1\r\n\r\n"},
		{"NUL in the path", "GET /health%00 HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"overlong dot", "GET /static/%C0%AE%C0%AE/admin/ HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"cookie garbage", "POST /shorten HTTP/1.1\r\nHost: x\r\nCookie: ;;;=;\"\r\n\r\n"},
	} {
		before := up.count()
		st := rawStatus(t, addr, tc.req)
		if st < 400 || st >= 500 {
			t.Errorf("%s: status %d, want 4xx", tc.name, st)
		}
		if up.count() != before {
			t.Errorf("%s: reached the upstream", tc.name)
		}
	}
}
