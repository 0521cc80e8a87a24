package idp_test

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// farFuture and farPast are NumericDates of every shape: past int64 seconds
// (2^63 and beyond, where a conversion to int64 overflows into the far
// past), exponent forms, beyond float64 (1e400), negative and fractional.
var (
	farFuture = []any{1e19, json.Number("9223372036854775807"), json.Number("9223372036854775808"),
		json.Number("9.3e18"), json.Number("1e30"), json.Number("1E+300"), json.Number("1e400"),
		json.Number("18446744073709551616"), float64(32503680000) /* the year 3000 */}
	farPast = []any{-1e19, json.Number("-9223372036854775808"), json.Number("-9223372036854775809"),
		json.Number("-1e30"), json.Number("-1e400"), json.Number("-0.5")}
)

func dateName(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Access tokens: an exp far in the future is valid, an nbf far in the
// future is not yet valid, an iat far in the future is refused; far-past
// dates the other way round; fractional dates to the nanosecond.
func TestVerifyNumericDatesWithoutOverflow(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, nil)
	now := time.Now()
	type tc struct {
		name   string
		claims map[string]any
		reason string // "" = valid
	}
	var cases []tc
	for _, v := range farFuture {
		cases = append(cases,
			tc{"exp " + dateName(v), map[string]any{"exp": v}, ""},
			tc{"nbf " + dateName(v), map[string]any{"nbf": v}, "token not yet valid"},
			tc{"iat " + dateName(v), map[string]any{"iat": v}, "issued in the future"})
	}
	for _, v := range farPast {
		cases = append(cases,
			tc{"exp " + dateName(v), map[string]any{"exp": v}, "token expired"},
			tc{"nbf " + dateName(v), map[string]any{"nbf": v}, ""},
			tc{"iat " + dateName(v), map[string]any{"iat": v}, ""})
	}
	unix := float64(now.Unix())
	cases = append(cases,
		tc{"fractional exp ahead", map[string]any{"exp": unix + 3600.5}, ""},
		tc{"fractional exp past", map[string]any{"exp": unix - 60.25, "iat": unix - 120.5}, "token expired"},
		tc{"fractional nbf ahead", map[string]any{"nbf": unix + 3600.75}, "token not yet valid"},
		tc{"exponent-form exp ahead", map[string]any{"exp": json.Number("1.9e9")}, ""},
		tc{"exponent-form nbf ahead", map[string]any{"nbf": json.Number("1.9e9")}, "token not yet valid"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			claims := srv.UserClaims(clientID, "alice")
			for k, v := range c.claims {
				claims[k] = v
			}
			id, err := p.Verify(t.Context(), srv.Mint(claims))
			if c.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if !id.ExpiresAt.After(now) {
					t.Fatalf("ExpiresAt %v, want after now", id.ExpiresAt)
				}
				return
			}
			if !errors.Is(err, idp.ErrInvalidToken) || !strings.Contains(idp.Reason(err), c.reason) {
				t.Fatalf("Verify = %v (reason %q), want %q", err, idp.Reason(err), c.reason)
			}
		})
	}
}

// A token valid past 2262, where unix nanoseconds end, is cached like any
// other: the second presentation is answered with the first's Identity.
func TestCacheFarFutureExp(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, nil)
	for _, exp := range farFuture {
		t.Run(dateName(exp), func(t *testing.T) {
			claims := srv.UserClaims(clientID, "alice")
			claims["exp"] = exp
			tok := srv.Mint(claims)
			first, err := p.Verify(t.Context(), tok)
			if err != nil {
				t.Fatal(err)
			}
			again, err := p.Verify(t.Context(), tok)
			if err != nil {
				t.Fatal(err)
			}
			if again != first {
				t.Fatal("verified again: the cache read the exp as passed")
			}
			if s := first.ExpiresAt.Unix(); s <= 0 || s > 1<<53 {
				t.Fatalf("ExpiresAt %d s", s)
			}
		})
	}
}

// Back-channel logout tokens follow the same rules: one not yet valid or
// issued in the far future ends nothing; one valid until the far future
// ends the session.
func TestBackchannelLogoutNumericDates(t *testing.T) {
	e := sessionEnv(t, idp.NewMemoryBackend(), nil)
	e.signIn(t, "/me")
	sids := e.idp.SessionIDs()
	if len(sids) != 1 {
		t.Fatalf("provider sessions: %v", sids)
	}
	logout := func(set map[string]any) int {
		c := map[string]any{"iss": e.idp.Issuer, "aud": clientID, "iat": time.Now().Unix(), "jti": "j-" + dateName(set),
			"sid": sids[0], "events": map[string]any{"http://schemas.openid.net/event/backchannel-logout": map[string]any{}}}
		for k, v := range set {
			c[k] = v
		}
		tok := e.idp.MintWith(idptest.MintOptions{NoDefaults: true}, c)
		return e.post(t, "/auth/backchannel-logout", "application/x-www-form-urlencoded",
			url.Values{"logout_token": {tok}}.Encode()).StatusCode
	}
	for _, v := range farFuture {
		for _, claim := range []string{"nbf", "iat"} {
			if got := logout(map[string]any{claim: v}); got != http.StatusBadRequest {
				t.Errorf("logout token with %s %s: %d, want 400", claim, dateName(v), got)
			}
		}
	}
	for _, v := range farPast {
		if got := logout(map[string]any{"exp": v}); got != http.StatusBadRequest {
			t.Errorf("logout token with exp %s: %d, want 400", dateName(v), got)
		}
	}
	if resp := e.me(t, false); resp.StatusCode != http.StatusOK {
		t.Fatalf("refused logout tokens ended the session: %d", resp.StatusCode)
	}
	if got := logout(map[string]any{"exp": json.Number("1e30"), "nbf": -1e19}); got != http.StatusOK {
		t.Fatalf("logout token valid until 1e30: %d, want 200", got)
	}
	if resp := e.me(t, false); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("after back-channel logout: %d, want 401", resp.StatusCode)
	}
}

// ID tokens in the login flow: the same judgement (go-oidc alone reads
// these dates through int64 and takes an nbf or iat of 1e19 for the far
// past, an exp of 1e30 for an expired token).
func TestCallbackIDTokenNumericDates(t *testing.T) {
	e := newFlowEnv(t, idptest.Options{}, nil)
	login := func(t *testing.T, set map[string]any) *http.Response {
		e.idp.SetClaimsHook(idHook(func(c map[string]any) {
			for k, v := range set {
				c[k] = v
			}
		}))
		defer e.idp.SetClaimsHook(nil)
		return e.get(t, e.loginToCallback(t))
	}
	for _, v := range farFuture {
		t.Run("exp "+dateName(v), func(t *testing.T) {
			if v == json.Number("1e400") {
				// go-oidc cannot decode a number beyond float64 and
				// refuses the token before any date is judged.
				wantProblem(t, login(t, map[string]any{"exp": v}), 401, "ID token is invalid")
				return
			}
			decodeDoc(t, login(t, map[string]any{"exp": v}))
		})
		for _, claim := range []string{"nbf", "iat"} {
			t.Run(claim+" "+dateName(v), func(t *testing.T) {
				wantProblem(t, login(t, map[string]any{claim: v}), 401, "ID token is invalid")
			})
		}
	}
	for _, v := range farPast {
		t.Run("exp "+dateName(v), func(t *testing.T) {
			wantProblem(t, login(t, map[string]any{"exp": v}), 401, "ID token is invalid")
		})
		if f, ok := v.(float64); ok && !math.IsInf(f, 0) { // go-oidc refuses -1e400 as it does 1e400
			t.Run("nbf "+dateName(v), func(t *testing.T) {
				decodeDoc(t, login(t, map[string]any{"nbf": v}))
			})
		}
	}
}

// A browser session over an access token valid until 1e30 (issued at
// -1e30) signs in and is served without refreshing: the session's expiry
// arithmetic in unix seconds overflows nowhere.
func TestSessionFarFutureAccessToken(t *testing.T) {
	for name, backend := range stores() {
		t.Run(name, func(t *testing.T) {
			e := sessionEnv(t, backend(), nil)
			e.idp.SetClaimsHook(func(typ string, c map[string]any) {
				if typ == "Bearer" {
					c["exp"], c["iat"] = json.Number("1e30"), json.Number("-1e30")
				}
			})
			e.signIn(t, "/me")
			before := e.idp.TokenRequests()
			for range 3 {
				if resp := e.me(t, false); resp.StatusCode != http.StatusOK {
					t.Fatalf("/me in the session: %d", resp.StatusCode)
				}
			}
			if n := e.idp.TokenRequests() - before; n != 0 {
				t.Fatalf("%d token requests: the session refreshed a token valid until 1e30", n)
			}
		})
	}
}
