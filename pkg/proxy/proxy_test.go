package proxy

import (
	"context"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/problem"
)

func TestPolicies(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	_, px := startProxy(t, testConfig(idpSrv, up.URL), Options{}, true)

	creator := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	plain := idpSrv.Mint(idpSrv.UserClaims("shortener", "bob"))
	admin := idpSrv.Mint(idpSrv.UserClaims("shortener", "carol", "ops"))
	editorClaims := idpSrv.UserClaims("shortener", "dave")
	editorClaims["resource_access"] = map[string]any{"shortener": map[string]any{"roles": []any{"editor"}}}
	editor := idpSrv.Mint(editorClaims)
	statsClaims := idpSrv.UserClaims("shortener", "erin", "admin")
	statsClaims["scope"] = "openid stats:read"
	stats := idpSrv.Mint(statsClaims)
	service := idpSrv.Mint(idpSrv.ServiceClaims(svcReporter))
	otherService := idpSrv.Mint(idpSrv.ServiceClaims(svcOther)) // not an accepted audience
	otherClient := idpSrv.Mint(idpSrv.UserClaims("other-app", "mallory", "creator"))
	expiredClaims := idpSrv.UserClaims("shortener", "alice", "creator")
	expiredClaims["exp"] = time.Now().Add(-time.Hour).Unix()
	expired := idpSrv.Mint(expiredClaims)
	tampered := creator[:len(creator)-4] + "AAAA"

	tests := []struct {
		name, method, path, token string
		want                      int
	}{
		{"public health, no token", "GET", "/health", "", 200},
		{"public HEAD follows GET", "HEAD", "/health", "", 200},
		{"public redirect, no token", "GET", "/abc1234", "", 200},
		{"public route, invalid token still served", "GET", "/abc1234", tampered, 200},
		{"create without token", "POST", "/shorten", "", 401},
		{"create with garbage", "POST", "/shorten", "not.a.jwt", 401},
		{"create with tampered token", "POST", "/shorten", tampered, 401},
		{"create with expired token", "POST", "/shorten", expired, 401},
		{"create without the role", "POST", "/shorten", plain, 403},
		{"create with the role", "POST", "/shorten", creator, 200},
		{"service token via optional audience", "POST", "/shorten", service, 200},
		{"service token of another client", "POST", "/shorten", otherService, 401},
		{"user token of another client", "POST", "/shorten", otherClient, 401},
		{"client role required", "DELETE", "/abc1234", creator, 403},
		{"client role held", "DELETE", "/abc1234", editor, 200},
		{"admin any: ops", "POST", "/admin/users", admin, 200},
		{"admin any: none", "POST", "/admin/users", creator, 403},
		{"scope required", "GET", "/admin/stats", admin, 403},
		{"scope held", "GET", "/admin/stats", stats, 200},
		{"unmatched, default authenticated, no token", "GET", "/a/b", "", 401},
		{"unmatched, default authenticated, token", "GET", "/a/b", plain, 200},
		{"method not in any rule", "PUT", "/abc1234", plain, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := up.count()
			resp, body := do(t, tt.method, px.URL+tt.path, tt.token, nil, "")
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.want, body)
			}
			forwarded := up.count() - before
			if tt.want == 200 && forwarded != 1 {
				t.Fatalf("forwarded %d requests, want 1", forwarded)
			}
			if tt.want != 200 {
				if forwarded != 0 {
					t.Fatalf("a rejected request reached the upstream")
				}
				if ct := resp.Header.Get("Content-Type"); ct != problem.ContentType {
					t.Fatalf("Content-Type %q, want problem+json", ct)
				}
				if tt.token != "" && strings.Contains(body, tt.token) {
					t.Fatal("the answer echoes the token")
				}
			}
			if tt.want == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("401 without WWW-Authenticate: %v", resp.Header)
			}
		})
	}
}

func TestDefaultPolicyDeny(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	cfg := testConfig(idpSrv, up.URL)
	cfg.DefaultPolicy = PolicyDeny
	_, px := startProxy(t, cfg, Options{}, true)
	tok := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator", "admin"))
	for _, path := range []string{"/a/b", "/"} {
		resp, _ := do(t, "GET", px.URL+path, tok, nil, "")
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s: %d, want 403", path, resp.StatusCode)
		}
	}
	if resp, _ := do(t, "GET", px.URL+"/health", "", nil, ""); resp.StatusCode != 200 {
		t.Errorf("a public rule under deny: %d", resp.StatusCode)
	}
	if up.count() != 1 {
		t.Errorf("upstream got %d requests, want 1", up.count())
	}
}

// spoofed are client-sent headers that must never reach the upstream as
// sent, in the spellings attackers use.
var spoofed = []string{
	"X-Auth-Request-User", "x-auth-request-user", "X_Auth_Request_User", "x_auth_request_user",
	"X-AUTH-REQUEST-EMAIL", "X_Auth_Request_Preferred_Username", "X-Auth-Request-Roles",
	"X-Auth-Request-Groups", "X-Auth-Request-Access-Token",
	"X-Forwarded-For", "X_Forwarded_For", "X-Forwarded-Host", "X-Forwarded-Proto", "Forwarded",
	"X-Forwarded-Uri", "X-Forwarded-Prefix", "X-Forwarded-User", "X-Forwarded-Email",
	"X-Original-URL", "X-Original-Uri", "X-Rewrite-URL", "X_Original_URL",
	"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override", "x_http_method_override",
	"X-Real-IP", "X-Remote-User", "Remote-User", "X_Request_Id",
}

func TestClientIdentityHeadersAreStripped(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	_, px := startProxy(t, testConfig(idpSrv, up.URL), Options{}, true)
	alice := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	hdr := map[string]string{}
	for _, h := range spoofed {
		hdr[h] = "spoofed"
	}
	for _, tc := range []struct{ name, method, path, token string }{
		{"public route, anonymous", "GET", "/health", ""},
		{"public route, with a token", "GET", "/abc1234", alice},
		{"protected route", "POST", "/shorten", alice},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, tc.method, px.URL+tc.path, tc.token, hdr, "")
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			got := up.last(t).Header
			for k, vs := range got {
				for _, v := range vs {
					if strings.Contains(v, "spoofed") {
						t.Errorf("upstream received %s: %s", k, v)
					}
				}
			}
			if ids := resp.Header.Values("X-Request-Id"); len(ids) != 1 || ids[0] == "spoofed" || ids[0] != got.Get("X-Request-Id") {
				t.Errorf("X-Request-Id: response %v, upstream %v", ids, got.Values("X-Request-Id"))
			}
			if xff := got.Values("X-Forwarded-For"); len(xff) != 1 || xff[0] != "127.0.0.1" {
				t.Errorf("X-Forwarded-For = %v, want the proxy's own", xff)
			}
			if got.Get("X-Forwarded-Proto") != "http" || got.Get("X-Forwarded-Host") == "" {
				t.Errorf("X-Forwarded-Proto/Host = %q/%q", got.Get("X-Forwarded-Proto"), got.Get("X-Forwarded-Host"))
			}
			if tc.token == "" {
				for _, h := range []string{"Authorization", "X-Auth-Request-User", "X-Auth-Request-Email"} {
					if got.Get(h) != "" {
						t.Errorf("anonymous request forwarded with %s", h)
					}
				}
				return
			}
			// Exactly these headers reach the upstream: the client's
			// harmless ones and the proxy's own.
			var keys []string
			for k := range got {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			wantKeys := []string{"Accept-Encoding", "Authorization", "User-Agent",
				"X-Auth-Request-Email", "X-Auth-Request-Preferred-Username", "X-Auth-Request-Roles", "X-Auth-Request-User",
				"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Request-Id"}
			if tc.method == "POST" {
				wantKeys = append(wantKeys, "Content-Length") // Go's client sends 0
				slices.Sort(wantKeys)
			}
			if !slices.Equal(keys, wantKeys) {
				t.Errorf("upstream saw headers %q\nwant %q", keys, wantKeys)
			}
			want := map[string]string{
				"Authorization":                     "Bearer " + alice,
				"X-Auth-Request-User":               "user-alice",
				"X-Auth-Request-Preferred-Username": "alice",
				"X-Auth-Request-Email":              "alice@example.com",
				"X-Auth-Request-Roles":              "offline_access,default-roles-demo,creator",
			}
			for k, v := range want {
				if vs := got.Values(k); len(vs) != 1 || vs[0] != v {
					t.Errorf("upstream %s = %q, want %q", k, vs, v)
				}
			}
		})
	}
}

func TestHeaderStrippingTable(t *testing.T) {
	h := newHeaderRules(DefaultConfig().Headers)
	custom := DefaultConfig().Headers
	custom.User = "X-User-Id"
	hc := newHeaderRules(custom)
	tests := []struct {
		rules *headerRules
		key   string
		strip bool
	}{
		{h, "X-Auth-Request-User", true},
		{h, "X_Auth_Request_User", true},
		{h, "x_auth_request_user", true},
		{h, "X-auth_request-USER", true},
		{h, "X-Auth-Request-Anything", true},
		{h, "X-Forwarded-For", true},
		{h, "X_Forwarded_Host", true},
		{h, "X-Forwarded-Uri", true},
		{h, "X-Forwarded-Prefix", true},
		{h, "Forwarded", true},
		{h, "X-Original-URL", true},
		{h, "X-Rewrite-Url", true},
		{h, "X-Http-Method-Override", true},
		{h, "X_HTTP_METHOD_OVERRIDE", true},
		{h, "Authorization", true},
		{h, "X-Request-Id", true},
		{h, "X-Real-Ip", true},
		// identity headers of other authenticating proxies
		{h, "X-Amzn-Oidc-Identity", true},
		{h, "X_Amzn_Oidc_Data", true},
		{h, "X-Goog-Authenticated-User-Email", true},
		{h, "X-Goog-Iap-Jwt-Assertion", true},
		{h, "Cf-Access-Authenticated-User-Email", true},
		{h, "X-Pomerium-Jwt-Assertion", true},
		{h, "X-WEBAUTH-USER", true},
		{h, "X-Consumer-Username", true},
		{h, "X-Authenticated-Userid", true},
		{h, "X-Ms-Client-Principal-Name", true},
		{h, "Content-Type", false},
		{h, "Accept", false},
		{h, "X-Auth", false},
		{h, "X-Custom-User", false},
		{h, "Cookie", false},
		{h, "X-" + strings.Repeat("a", 200), false},
		{h, "X-Auth-Request-" + strings.Repeat("a", 200), true},
		{hc, "X-User-Id", true},
		{hc, "x_user_id", true},
		{h, "X-User-Id", false},
	}
	for _, tt := range tests {
		if got := tt.rules.stripped(tt.key); got != tt.strip {
			t.Errorf("stripped(%q) = %v, want %v", tt.key, got, tt.strip)
		}
	}
}

func TestHopByHopAbuseCannotRemoveProxyHeaders(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	_, px := startProxy(t, testConfig(idpSrv, up.URL), Options{}, true)
	alice := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	resp, body := do(t, "POST", px.URL+"/shorten", alice, map[string]string{
		"Connection": "X-Auth-Request-User, Authorization, X-Forwarded-For, X-Request-Id, X-Auth-Request-Roles",
	}, "")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	got := up.last(t).Header
	for _, k := range []string{"X-Auth-Request-User", "Authorization", "X-Forwarded-For", "X-Request-Id", "X-Auth-Request-Roles"} {
		if got.Get(k) == "" {
			t.Errorf("Connection: %s removed the proxy's header", k)
		}
	}
}

func TestClaimValuesAreNeverInjected(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	_, px := startProxy(t, testConfig(idpSrv, up.URL), Options{}, true)
	claims := idpSrv.UserClaims("shortener", "x", "creator", "a,b", "ünïcode")
	claims["sub"] = "evil\r\nX-Auth-Request-Roles: admin"
	claims["preferred_username"] = "józef"
	claims["email"] = "nul\x00@example.com"
	claims["name"] = "ok"
	tok := idpSrv.Mint(claims)
	resp, body := do(t, "POST", px.URL+"/shorten", tok, nil, "")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	got := up.last(t).Header
	var dec mime.WordDecoder
	for k, want := range map[string]string{
		"X-Auth-Request-User":               "evil\r\nX-Auth-Request-Roles: admin",
		"X-Auth-Request-Preferred-Username": "józef",
		"X-Auth-Request-Email":              "nul\x00@example.com",
	} {
		v := got.Get(k)
		if strings.ContainsAny(v, "\r\n\x00") || !strings.HasPrefix(v, "=?UTF-8?B?") {
			t.Errorf("%s = %q: not encoded", k, v)
		}
		if d, err := dec.DecodeHeader(v); err != nil || d != want {
			t.Errorf("%s decodes to %q (%v), want %q", k, d, err, want)
		}
	}
	roles := strings.Split(got.Get("X-Auth-Request-Roles"), ",")
	if len(roles) != 5 || roles[2] != "creator" {
		t.Fatalf("roles = %q", roles)
	}
	if d, _ := dec.DecodeHeader(roles[3]); d != "a,b" {
		t.Errorf("role with a comma: %q → %q", roles[3], d)
	}
	if d, _ := dec.DecodeHeader(roles[4]); d != "ünïcode" {
		t.Errorf("non-ASCII role: %q → %q", roles[4], d)
	}
	if len(got.Values("X-Auth-Request-Roles")) != 1 {
		t.Errorf("injected a second roles header: %v", got.Values("X-Auth-Request-Roles"))
	}
}

func TestHeaderSwitches(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	cfg := testConfig(idpSrv, up.URL)
	cfg.Headers.ForwardToken = false
	cfg.Headers.Email = ""
	cfg.Headers.User = "X-User-Sub"
	cfg.Headers.TrustForwarded = true
	_, px := startProxy(t, cfg, Options{}, true)
	alice := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	resp, _ := do(t, "POST", px.URL+"/shorten", alice, map[string]string{
		"X-Forwarded-For": "203.0.113.7", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "sho.rt",
		"X_Forwarded_For": "198.51.100.1", "X-Auth-Request-Email": "spoofed", "X-User-Sub": "spoofed",
	}, "")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	got := up.last(t).Header
	checks := map[string]string{
		"Authorization":        "",
		"X-Auth-Request-Email": "",
		"X-Auth-Request-User":  "",
		"X-User-Sub":           "user-alice",
		"X-Forwarded-For":      "203.0.113.7, 127.0.0.1",
		"X-Forwarded-Proto":    "https",
		"X-Forwarded-Host":     "sho.rt",
		"X_forwarded_for":      "",
	}
	for k, want := range checks {
		if v := strings.Join(got.Values(k), "|"); v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
}

func TestPathConfusionIsRejectedBeforeMatching(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	p, px := startProxy(t, testConfig(idpSrv, up.URL), Options{}, true)
	// Through a real server: Go's client and server keep these as sent.
	for _, target := range []string{
		"/health/../admin/users", "/./admin/", "//admin/", "/admin%2Fusers", "/health%2F..%2Fadmin",
		"/abc;jsessionid=x", "/%2e%2e/admin/", "/admin%5cusers", "/abc%252F", "/static/%C0%AE%C0%AE/admin/",
	} {
		resp, body := do(t, "GET", px.URL+target, "", nil, "")
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != problem.ContentType {
			t.Errorf("GET %s: %d %s, want 400 problem+json", target, resp.StatusCode, body)
		}
	}
	// Directly: forms an HTTP client will not send.
	for _, target := range []string{"/a\\b", "*"} {
		r := httptest.NewRequest("GET", "/", nil)
		r.URL.Path, r.URL.RawPath = target, ""
		if target == "*" {
			r = httptest.NewRequest("OPTIONS", "*", nil)
		}
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, r)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%q: %d, want 400", target, rec.Code)
		}
	}
	for _, m := range []string{"TRACE", "CONNECT"} {
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, httptest.NewRequest(m, "/health", nil))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d, want 405", m, rec.Code)
		}
	}
	if up.count() != 0 {
		t.Fatalf("rejected requests reached the upstream: %d", up.count())
	}
	// Accepted paths are forwarded exactly, query untouched and unjudged.
	resp, _ := do(t, "GET", px.URL+"/caf%C3%A9?next=/admin/&x=%2F", "", nil, "")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := up.last(t).RequestURI; got != "/caf%C3%A9?next=/admin/&x=%2F" {
		t.Errorf("upstream request URI %q", got)
	}
}

func TestUpstreamPathPrefix(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	_, px := startProxy(t, testConfig(idpSrv, up.URL+"/base"), Options{}, true)
	if resp, _ := do(t, "GET", px.URL+"/health?q=1", "", nil, ""); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := up.last(t).RequestURI; got != "/base/health?q=1" {
		t.Errorf("upstream got %q", got)
	}
}

func TestUpgrades(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	_, px := startProxy(t, testConfig(idpSrv, up.URL), Options{}, true)
	resp, _ := do(t, "GET", px.URL+"/health", "", map[string]string{"Connection": "Upgrade, HTTP2-Settings", "Upgrade": "h2c", "HTTP2-Settings": "AAMAAABkAARAAAAAAAIAAAAA"}, "")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	got := up.last(t).Header
	if got.Get("Upgrade") != "" || got.Get("Connection") != "" || got.Get("Http2-Settings") != "" {
		t.Errorf("h2c upgrade forwarded: %v", got)
	}
	resp, _ = do(t, "GET", px.URL+"/health", "", map[string]string{"Connection": "Upgrade", "Upgrade": "websocket"}, "")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := up.last(t).Header; !strings.EqualFold(got.Get("Upgrade"), "websocket") {
		t.Errorf("websocket upgrade not forwarded: %v", got)
	}
}

func TestUpstreamFailures(t *testing.T) {
	idpSrv := newProvider(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	_ = ln.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	for _, tc := range []struct {
		name, url string
		want      int
	}{{"down", dead, 502}, {"timeout", slow.URL, 504}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(idpSrv, tc.url)
			cfg.Upstream.Timeout = 100 * time.Millisecond
			_, px := startProxy(t, cfg, Options{}, false)
			resp, body := do(t, "GET", px.URL+"/health", "", nil, "")
			if resp.StatusCode != tc.want || resp.Header.Get("Content-Type") != problem.ContentType {
				t.Fatalf("status %d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
		})
	}
}

func TestMaxBodyBytes(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	cfg := testConfig(idpSrv, up.URL)
	cfg.MaxBodyBytes = 16
	_, px := startProxy(t, cfg, Options{}, true)
	alice := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	if resp, _ := do(t, "POST", px.URL+"/shorten", alice, nil, strings.Repeat("x", 17)); resp.StatusCode != 413 {
		t.Errorf("declared length over the limit: %d", resp.StatusCode)
	}
	if up.count() != 0 {
		t.Errorf("an oversized body reached the upstream")
	}
	// Chunked: the limit trips while streaming.
	req, _ := http.NewRequest("POST", px.URL+"/shorten", struct{ *strings.Reader }{strings.NewReader(strings.Repeat("x", 1000))})
	req.Header.Set("Authorization", "Bearer "+alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Errorf("chunked body over the limit: %d", resp.StatusCode)
	}
	if resp, _ := do(t, "POST", px.URL+"/shorten", alice, nil, strings.Repeat("x", 16)); resp.StatusCode != 200 {
		t.Errorf("body at the limit: %d", resp.StatusCode)
	}
}

func TestRequestID(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	_, px := startProxy(t, testConfig(idpSrv, up.URL), Options{}, true)
	resp, _ := do(t, "GET", px.URL+"/health", "", map[string]string{"X-Request-Id": "abc-123.x:y"}, "")
	if resp.Header.Get("X-Request-Id") != "abc-123.x:y" || up.last(t).Header.Get("X-Request-Id") != "abc-123.x:y" {
		t.Errorf("valid id not kept: %q / %q", resp.Header.Get("X-Request-Id"), up.last(t).Header.Get("X-Request-Id"))
	}
	ids := map[string]bool{}
	for _, sent := range []string{"", "bad id with spaces", strings.Repeat("a", 200), "<script>"} {
		resp, _ := do(t, "GET", px.URL+"/health", "", map[string]string{"X-Request-Id": sent}, "")
		id := resp.Header.Get("X-Request-Id")
		if id == "" || id == sent || !validRequestID(id) || ids[id] || up.last(t).Header.Get("X-Request-Id") != id {
			t.Errorf("sent %q: got %q", sent, id)
		}
		ids[id] = true
	}
	// A rejected request gets an id too.
	resp, _ = do(t, "POST", px.URL+"/shorten", "", nil, "")
	if resp.Header.Get("X-Request-Id") == "" {
		t.Error("401 without X-Request-Id")
	}
}

func TestProviderOutages(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	p, px := startProxy(t, testConfig(idpSrv, up.URL), Options{}, true)
	alice := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	idpSrv.SetDown(true)
	fresh := idpSrv.Mint(idpSrv.UserClaims("shortener", "bob", "creator")) // same key, never seen
	for _, tok := range []string{alice, fresh} {
		if resp, body := do(t, "POST", px.URL+"/shorten", tok, nil, ""); resp.StatusCode != 200 {
			t.Fatalf("provider down after start: %d %s", resp.StatusCode, body)
		}
	}
	ops := httptest.NewServer(p.OpsHandler())
	t.Cleanup(ops.Close)
	if resp, _ := do(t, "GET", ops.URL+"/readyz", "", nil, ""); resp.StatusCode != 200 {
		t.Errorf("readyz with cached keys: %d", resp.StatusCode)
	}

	// Down at start: 503 on protected routes, public ones served, not ready.
	idp2 := newProvider(t)
	idp2.SetDown(true)
	p2, px2 := startProxy(t, testConfig(idp2, up.URL), Options{}, false)
	tok2 := idp2.Mint(idp2.UserClaims("shortener", "alice", "creator"))
	resp, _ := do(t, "POST", px2.URL+"/shorten", tok2, nil, "")
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("provider down at start: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp, _ := do(t, "GET", px2.URL+"/health", "", nil, ""); resp.StatusCode != 200 {
		t.Errorf("public route while the provider is down: %d", resp.StatusCode)
	}
	ops2 := httptest.NewServer(p2.OpsHandler())
	t.Cleanup(ops2.Close)
	resp, body := do(t, "GET", ops2.URL+"/readyz", "", nil, "")
	if resp.StatusCode != 503 || !strings.Contains(body, `"keys_loaded":false`) {
		t.Errorf("readyz: %d %s", resp.StatusCode, body)
	}
	idp2.SetDown(false)
	// Refresh joins a background fetch that may have started while the
	// provider was down; the next one succeeds.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for err := p2.Plugin().Refresh(ctx); err != nil; err = p2.Plugin().Refresh(ctx) {
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if resp, _ := do(t, "POST", px2.URL+"/shorten", tok2, nil, ""); resp.StatusCode != 200 {
		t.Errorf("after recovery: %d", resp.StatusCode)
	}
}
