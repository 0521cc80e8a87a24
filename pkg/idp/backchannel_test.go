package idp_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// Back-channel logout: a valid logout token from the provider ends the
// sessions it names at once; invalid ones are 400.
func TestBackchannelLogout(t *testing.T) {
	for name, backend := range stores() {
		t.Run(name, func(t *testing.T) {
			e := sessionEnv(t, backend(), nil)
			e.signIn(t, "/me")
			sids := e.idp.SessionIDs()
			if len(sids) != 1 {
				t.Fatalf("provider sessions: %v", sids)
			}
			post := func(tok string) int {
				resp := e.post(t, "/auth/backchannel-logout", "application/x-www-form-urlencoded",
					url.Values{"logout_token": {tok}}.Encode())
				return resp.StatusCode
			}
			claims := func(mut func(map[string]any)) string {
				c := map[string]any{"iss": e.idp.Issuer, "aud": clientID, "iat": time.Now().Unix(), "jti": "j-" + t.Name(),
					"sid": sids[0], "events": map[string]any{"http://schemas.openid.net/event/backchannel-logout": map[string]any{}}}
				mut(c)
				return e.idp.MintWith(idptest.MintOptions{NoDefaults: true}, c)
			}
			for what, tok := range map[string]string{
				"with a nonce":      claims(func(c map[string]any) { c["nonce"] = "n" }),
				"without the event": claims(func(c map[string]any) { c["events"] = map[string]any{} }),
				"event not object": claims(func(c map[string]any) {
					c["events"] = map[string]any{"http://schemas.openid.net/event/backchannel-logout": true}
				}),
				"another audience":   claims(func(c map[string]any) { c["aud"] = "other" }),
				"another issuer":     claims(func(c map[string]any) { c["iss"] = "http://evil/realms/demo" }),
				"no sid nor sub":     claims(func(c map[string]any) { delete(c, "sid") }),
				"without iat":        claims(func(c map[string]any) { delete(c, "iat") }),
				"too old":            claims(func(c map[string]any) { c["iat"] = time.Now().Add(-time.Hour).Unix() }),
				"an access token":    e.idp.Mint(e.idp.UserClaims(clientID, "alice")),
				"not a token at all": "abc",
			} {
				if got := post(tok); got != http.StatusBadRequest {
					t.Errorf("logout token %s: %d, want 400", what, got)
				}
			}
			if resp := e.me(t, false); resp.StatusCode != 200 {
				t.Fatalf("refused logout tokens ended the session: %d", resp.StatusCode)
			}
			if got := post(e.idp.LogoutToken(clientID, sids[0], "")); got != http.StatusOK {
				t.Fatalf("valid logout token: %d", got)
			}
			if resp := e.me(t, false); resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("after back-channel logout: %d, want 401", resp.StatusCode)
			}
			// By sub: every session of the user.
			e.signIn(t, "/me")
			if got := post(e.idp.LogoutToken(clientID, "", "user-alice")); got != http.StatusOK {
				t.Fatalf("logout token by sub: %d", got)
			}
			if resp := e.me(t, false); resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("after back-channel logout by sub: %d, want 401", resp.StatusCode)
			}
		})
	}
}

// FuzzBackchannelLogout posts arbitrary logout tokens: the answer is 400
// (or 200 for a genuine one), never a panic or a 5xx.
func FuzzBackchannelLogout(f *testing.F) {
	e := sessionEnv(f, idp.NewMemoryBackend(), nil)
	f.Add(e.idp.LogoutToken(clientID, "sid-1", ""))
	f.Add(e.idp.LogoutToken(clientID, "", "user-alice"))
	f.Add(e.idp.Mint(e.idp.UserClaims(clientID, "alice")))
	f.Add("eyJhbGciOiJub25lIn0.eyJzaWQiOiJ4In0.")
	f.Add("a.b.c")
	f.Add("")
	h := e.p.Routes()
	f.Fuzz(func(t *testing.T, tok string) {
		body := url.Values{"logout_token": {tok}}.Encode()
		r := httptest.NewRequest(http.MethodPost, "/auth/backchannel-logout", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK && w.Code != http.StatusBadRequest {
			t.Fatalf("logout token %q: %d %s", tok, w.Code, w.Body)
		}
	})
}
