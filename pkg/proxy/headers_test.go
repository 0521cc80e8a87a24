package proxy

import (
	"mime"
	"slices"
	"strings"
	"testing"
)

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
