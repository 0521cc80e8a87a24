package proxy

import (
	"net/http"
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
