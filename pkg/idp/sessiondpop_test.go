package idp_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/dpop"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

func newSessionKey(t testing.TB) (crypto.Signer, string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jkt, err := dpop.ThumbprintOfKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	return k, jkt
}

// sessionJKT is the cnf.jkt of the access token of the browser's session
// (the plugin's verdict on a request carrying its cookies), "" for a
// bearer token; ok is false when the session does not authenticate.
func (e *flowEnv) sessionJKT(t *testing.T) (jkt string, ok bool) {
	t.Helper()
	r, _ := http.NewRequest(http.MethodGet, e.base+"/me", nil)
	for _, c := range e.client.Jar.Cookies(r.URL) {
		r.AddCookie(c)
	}
	v := e.p.Authorize(r)
	if v.Outcome != idp.Allowed {
		return "", false
	}
	return v.Identity.DPoPThumbprint(), true
}

// Where discovery advertises dpop_signing_alg_values_supported (RFC 9449
// §5.1), the sign-in's code exchange and the session's refresh carry a
// DPoP proof by the plugin's key (§5), answering the token endpoint's
// use_dpop_nonce (§8) by a retry with the nonce: the session's tokens are
// bound to the plugin's key (cnf.jkt, §6.1), and each request of the
// session passes on that binding without a proof from the browser. With
// Redis or cookies alike.
func TestSessionDPoPBoundToPluginKey_RFC9449_5_8(t *testing.T) {
	for name, backend := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			key, jkt := newSessionKey(t)
			clk := new(testClock)
			e := sessionEnvWith(t, idptest.Options{TTL: 10 * time.Minute, Now: clk.Now, DPoPNonce: true}, backend(), func(c *idp.Config) {
				c.Now = clk.Now
				c.Leeway = -1
				c.Session.RefreshMargin = 4 * time.Minute
				c.Session.DPoPKeys = []crypto.Signer{key}
			})
			before := e.idp.TokenRequests()
			e.signIn(t, "/me")
			if n := e.idp.TokenRequests() - before; n != 2 {
				t.Errorf("%d token requests for the code exchange, want 2 (use_dpop_nonce, then the proof with the nonce)", n)
			}
			if resp := e.me(t, true); resp.StatusCode != 200 || readBody(resp) != "alice" {
				t.Fatalf("with the session: %d", resp.StatusCode)
			}
			if got, ok := e.sessionJKT(t); !ok || got != jkt {
				t.Fatalf("session token cnf.jkt %q (ok %v), want the plugin key's %q", got, ok, jkt)
			}
			// 6.5 min on, the refresh: bound to the same key again (the
			// provider's nonce has moved on meanwhile, so it asks again).
			before = e.idp.TokenRequests()
			clk.Advance(6*time.Minute + 30*time.Second)
			if resp := e.me(t, false); resp.StatusCode != 200 {
				t.Fatalf("after the refresh: %d %s", resp.StatusCode, readBody(resp))
			}
			if e.idp.TokenRequests() == before {
				t.Fatal("no refresh")
			}
			if got, ok := e.sessionJKT(t); !ok || got != jkt {
				t.Fatalf("refreshed token cnf.jkt %q (ok %v), want %q", got, ok, jkt)
			}
		})
	}
}

// A provider that does not advertise DPoP (no
// dpop_signing_alg_values_supported, RFC 9449 §5.1) is sent no proof: the
// session keeps bearer tokens, as without keys.
func TestSessionDPoPNotAdvertised_RFC9449_5_1(t *testing.T) {
	key, _ := newSessionKey(t)
	opts := idptest.Options{Discovery: func(doc map[string]any) { delete(doc, "dpop_signing_alg_values_supported") }}
	e := sessionEnvWith(t, opts, nil, func(c *idp.Config) { c.Session.DPoPKeys = []crypto.Signer{key} })
	e.signIn(t, "/me")
	if got, ok := e.sessionJKT(t); !ok || got != "" {
		t.Fatalf("session token cnf.jkt %q (ok %v), want a bearer token", got, ok)
	}
}

// The session's binding is the plugin's own (RFC 9449 §6.1, §7.1 read
// from the holder's side): a session token bound to a key that is none of
// DPoPKeys ends the session (API 401, browser to the login), and the
// cookies are cleared. A previous or next key (DPoPKeys[1:]) is accepted:
// a rotation signs no one out.
func TestSessionDPoPForeignKey_RFC9449_6_1(t *testing.T) {
	key, _ := newSessionKey(t)
	prev, prevJKT := newSessionKey(t)
	_, otherJKT := newSessionKey(t)
	for _, tc := range []struct {
		name   string
		jkt    string
		passes bool
	}{
		{"the previous key", prevJKT, true},
		{"another key", otherJKT, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := sessionEnv(t, nil, func(c *idp.Config) { c.Session.DPoPKeys = []crypto.Signer{key, prev} })
			e.idp.SetClaimsHook(func(typ string, claims map[string]any) {
				if typ == "Bearer" {
					claims["cnf"] = map[string]any{"jkt": tc.jkt}
				}
			})
			e.signIn(t, "/me")
			resp := e.me(t, false)
			if tc.passes {
				if resp.StatusCode != 200 {
					t.Fatalf("a session bound to %s: %d, want 200", tc.name, resp.StatusCode)
				}
				return
			}
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("a session bound to %s: %d, want 401", tc.name, resp.StatusCode)
			}
			if resp := e.me(t, true); resp.StatusCode != http.StatusFound {
				t.Fatalf("browser: %d, want 302 to the login", resp.StatusCode)
			}
		})
	}
}

// Keys the proofs cannot be made with are a configuration error.
func TestSessionDPoPKeysValidated(t *testing.T) {
	cfg := idp.Config{ServerURL: "http://127.0.0.1:1", Realm: "demo", ClientID: clientID, ClientSecret: clientSecret,
		IncludeRoutes: true, RedirectURI: "http://127.0.0.1:2/auth/callback", SessionSecret: []byte(sessionSecret),
		Session: &idp.SessionConfig{DPoPKeys: []crypto.Signer{nil}}}
	if err := cfg.Validate(); !errors.Is(err, idp.ErrConfig) {
		t.Fatalf("Validate with a nil DPoP key: %v, want ErrConfig", err)
	}
}
