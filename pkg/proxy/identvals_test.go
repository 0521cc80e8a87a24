package proxy

import (
	"net/http"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// The memo computes a user's header values once, shares them between
// requests (no allocation), keeps the email back unless verified, and a
// header changed in one request never shows in another's.
func TestIdentityValuesShared(t *testing.T) {
	h := newHeaderRules(HeadersConfig{ForwardToken: true, User: "X-User", PreferredUsername: "X-Name", Email: "X-Email", Roles: "X-Roles"})
	u := &idp.User{Sub: "ü-1", PreferredUsername: "alice", Email: "a@example.com", RealmRoles: []string{"a,b", "c"}}
	ids := map[bool]*idp.Identity{
		true:  {User: u, Payload: &idp.TokenPayload{EmailVerified: true}, Raw: "x.y.z"},
		false: {User: u, Payload: &idp.TokenPayload{}, Raw: "x.y.z"},
	}
	set := func(emailVerified bool) http.Header {
		hdr := http.Header{}
		h.setIdentity(hdr, ids[emailVerified], []string{"Bearer x.y.z"})
		return hdr
	}
	first := set(true)
	want := http.Header{
		"Authorization": {"Bearer x.y.z"},
		"X-User":        {headerValue("ü-1")},
		"X-Name":        {"alice"},
		"X-Email":       {"a@example.com"},
		"X-Roles":       {joinRoles(u.RealmRoles)},
	}
	for k, v := range want {
		if got := first[k]; len(got) != 1 || got[0] != v[0] {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if first["X-User"][0] == "ü-1" {
		t.Error("non-ASCII sub sent raw")
	}
	again := set(true)
	if &again["X-Roles"][0] != &first["X-Roles"][0] {
		t.Error("values rebuilt for the same user")
	}
	if unverified := set(false); unverified["X-Email"] != nil || unverified["X-User"][0] != first["X-User"][0] {
		t.Errorf("unverified email: %v", unverified)
	}
	again.Add("X-Roles", "injected")
	again["X-Name"] = []string{"changed"}
	if other := set(true); len(other["X-Roles"]) != 1 || other["X-Name"][0] != "alice" {
		t.Errorf("one request's header change shows in another's: %v", other)
	}
	hdr := http.Header{}
	bearer := []string{"Bearer x.y.z"}
	if n := testing.AllocsPerRun(100, func() {
		clear(hdr)
		h.setIdentity(hdr, ids[true], bearer)
	}); n != 0 {
		t.Errorf("setIdentity for a known user allocates %.0f times", n)
	}
	other := &idp.User{Sub: "bob"}
	if got := set(true); got["X-User"][0] != first["X-User"][0] {
		t.Fatal("memo mixed users")
	}
	hdr = http.Header{}
	h.setIdentity(hdr, &idp.Identity{User: other, Payload: &idp.TokenPayload{EmailVerified: true}, Raw: "x.y.z"}, nil)
	if hdr.Get("X-User") != "bob" || hdr.Get("X-Roles") != "" || hdr.Get("Authorization") != "Bearer x.y.z" {
		t.Errorf("second user: %v", hdr)
	}
}

// Claim headers carry the claim's values as the roles header carries
// roles: each value encoded when HTTP or a list parser would change it,
// comma-separated; nothing for an absent, empty or object claim; numbers
// in their canonical form; computed once per identity.
func TestClaimHeaderValues(t *testing.T) {
	h := newHeaderRules(HeadersConfig{Claims: map[string]string{
		"x-tenant": "tid", "X-Groups": "groups", "X-Level": "level", "X-Admin": "admin", "X-Obj": "obj",
		"X-Absent": "absent", "X-Empty": "empty", "X-Padded": "padded", "X-Comma": "comma", "X-Roles-Keys": "keys(roles)",
		"X-Bad-Path": "a..b",
	}})
	raw := `{"tid":"t1","groups":["eng"," ops","a,b","","=?x"],"level":1.50,"admin":true,"obj":{"a":1},"empty":[],
		"padded":" alice","comma":"a,b","roles":{"r1":{},"r2":{}}}`
	id := &idp.Identity{User: &idp.User{Sub: "s"}, Payload: &idp.TokenPayload{Raw: []byte(raw)}}
	hdr := http.Header{}
	h.setIdentity(hdr, id, nil)
	want := map[string]string{
		"X-Tenant":     "t1",
		"X-Groups":     "eng," + encodedWord(" ops") + "," + encodedWord("a,b") + "," + encodedWord("") + "," + encodedWord("=?x"),
		"X-Level":      "1.5",
		"X-Admin":      "true",
		"X-Padded":     encodedWord(" alice"),
		"X-Comma":      encodedWord("a,b"),
		"X-Roles-Keys": "r1,r2",
	}
	for k, v := range want {
		if got := hdr[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	for _, k := range []string{"X-Obj", "X-Absent", "X-Empty", "X-Bad-Path"} {
		if got, ok := hdr[k]; ok {
			t.Errorf("%s = %q, want no header", k, got)
		}
	}
	for _, k := range []string{"x-tenant", "X_Tenant", "X-GROUPS"} {
		if !h.stripped(k) {
			t.Errorf("the client's %s is not stripped", k)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		clear(hdr)
		h.setIdentity(hdr, id, nil)
	}); n != 0 {
		t.Errorf("setIdentity with claim headers for a known identity allocates %.0f times", n)
	}
}
