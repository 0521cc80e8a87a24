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
	set := func(emailVerified bool) http.Header {
		hdr := http.Header{}
		h.setIdentity(hdr, u, "x.y.z", []string{"Bearer x.y.z"}, emailVerified)
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
		h.setIdentity(hdr, u, "x.y.z", bearer, true)
	}); n != 0 {
		t.Errorf("setIdentity for a known user allocates %.0f times", n)
	}
	other := &idp.User{Sub: "bob"}
	if got := set(true); got["X-User"][0] != first["X-User"][0] {
		t.Fatal("memo mixed users")
	}
	hdr = http.Header{}
	h.setIdentity(hdr, other, "x.y.z", nil, true)
	if hdr.Get("X-User") != "bob" || hdr.Get("X-Roles") != "" || hdr.Get("Authorization") != "Bearer x.y.z" {
		t.Errorf("second user: %v", hdr)
	}
}
