package proxy

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/idp-proxy/idp-proxy/internal/problem"
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
