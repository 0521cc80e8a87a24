package idp_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// The README's example with the /auth routes mounted and the whole mux
// behind Middleware: the login routes must stay reachable without a token,
// everything else still needs one.
func TestMiddlewareLetsOwnRoutesThrough(t *testing.T) {
	srv := idptest.NewServer(t, idptest.Options{Clients: []idptest.Client{{ID: clientID, Secret: clientSecret}}})
	mux := http.NewServeMux()
	app := httptest.NewUnstartedServer(nil)
	base := "http://" + app.Listener.Addr().String()
	p := newPlugin(t, srv, func(c *idp.Config) {
		c.ClientSecret = clientSecret
		c.IncludeRoutes = true
		c.RedirectURI = base + "/auth/callback"
		c.SessionSecret = []byte(sessionSecret)
	})
	mux.Handle("/auth/", p.Routes())
	mux.Handle("GET /me", p.WithUser(func(w http.ResponseWriter, r *http.Request, u *idp.User) {
		_, _ = io.WriteString(w, "hello "+u.PreferredUsername)
	}))
	app.Config.Handler = p.Middleware(mux)
	app.Start()
	t.Cleanup(app.Close)

	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(base + "/auth/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(resp.Header.Get("Location"), srv.Issuer) {
		t.Fatalf("GET /auth/login behind Middleware: %d %q, want 302 to the provider", resp.StatusCode, resp.Header.Get("Location"))
	}
	// A path that only starts like the prefix is not one of the routes.
	for _, path := range []string{"/me", "/authx", "/auth-login"} {
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a token: %d, want 401", path, resp.StatusCode)
		}
	}
	if cs := p.Cookies(); !cs.OwnsPath("/auth/callback") || !cs.OwnsPath("/auth") || cs.OwnsPath("/authx") {
		t.Error("OwnsPath disagrees with the routes")
	}
}

func TestAuthorizeVerdicts(t *testing.T) {
	srv := idptest.NewServer(t, idptest.Options{})
	p := newPlugin(t, srv, nil)
	admin := idp.RequireRoles(idp.MatchAll, "admin")
	good := srv.Mint(srv.UserClaims(clientID, "alice", "creator"))
	expired := srv.UserClaims(clientID, "alice")
	expired["exp"] = 1
	tests := []struct {
		name    string
		auth    []string
		guards  []idp.Guard
		outcome idp.Outcome
		status  int
		sentry  error
	}{
		{"no token", nil, nil, idp.NoToken, 401, idp.ErrNoToken},
		{"two tokens", []string{"Bearer " + good, "Bearer " + good}, nil, idp.InvalidRequest, 400, idp.ErrInvalidRequest},
		{"expired", []string{"Bearer " + srv.Mint(expired)}, nil, idp.InvalidToken, 401, idp.ErrInvalidToken},
		{"valid", []string{"Bearer " + good}, nil, idp.Allowed, 200, nil},
		{"valid, guard passes", []string{"Bearer " + good}, []idp.Guard{idp.RequireRoles(idp.MatchAll, "creator")}, idp.Allowed, 200, nil},
		{"valid, guard refuses", []string{"Bearer " + good}, []idp.Guard{admin}, idp.Forbidden, 403, idp.ErrForbidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/x", nil)
			r.Header["Authorization"] = tc.auth
			v := p.Authorize(r, tc.guards...)
			if v.Outcome != tc.outcome || v.Status() != tc.status {
				t.Fatalf("verdict %s/%d (%v), want %s/%d", v.Outcome, v.Status(), v.Err, tc.outcome, tc.status)
			}
			if !errors.Is(v.Err, tc.sentry) || (tc.sentry == nil) != (v.Err == nil) {
				t.Errorf("Err = %v, want %v", v.Err, tc.sentry)
			}
			wantID := tc.outcome == idp.Allowed || tc.outcome == idp.Forbidden
			if (v.Identity != nil) != wantID {
				t.Errorf("Identity = %v, want present: %v", v.Identity, wantID)
			}
			if v.Allowed() != (tc.outcome == idp.Allowed) {
				t.Errorf("Allowed() = %v", v.Allowed())
			}
			if tc.outcome == idp.Allowed {
				if v.Identity.Raw != good || v.Identity.User.PreferredUsername != "alice" || v.Identity.Payload.Subject == "" {
					t.Errorf("identity %+v", v.Identity)
				}
				return
			}
			// Writing is a separate step, and gives the same answer as the
			// middleware.
			rec := httptest.NewRecorder()
			p.WriteVerdict(rec, r, v)
			if rec.Code != tc.status || rec.Header().Get("Content-Type") != "application/problem+json" || !strings.Contains(rec.Body.String(), v.Detail()) {
				t.Errorf("WriteVerdict: %d %q %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
			}
			mw := httptest.NewRecorder()
			p.Require(tc.guards...)(http.NotFoundHandler()).ServeHTTP(mw, r)
			if mw.Code != rec.Code || mw.Header().Get("WWW-Authenticate") != rec.Header().Get("WWW-Authenticate") || mw.Body.String() != rec.Body.String() {
				t.Errorf("Require answered %d %q %s; WriteVerdict %d %q %s", mw.Code, mw.Header().Get("WWW-Authenticate"), mw.Body,
					rec.Code, rec.Header().Get("WWW-Authenticate"), rec.Body)
			}
		})
	}
}

// An identity already in the context (an enclosing Middleware) is judged
// without verifying again: even a request whose header no longer carries
// a token is allowed, and the guards still apply.
func TestAuthorizeReusesContextIdentity(t *testing.T) {
	srv := idptest.NewServer(t, idptest.Options{})
	p := newPlugin(t, srv, nil)
	r := httptest.NewRequest("GET", "/x", nil)
	r.Header.Set("Authorization", "Bearer "+srv.Mint(srv.UserClaims(clientID, "alice", "creator")))
	v := p.Authorize(r)
	if !v.Allowed() {
		t.Fatalf("verdict %v", v.Err)
	}
	inner := httptest.NewRequest("GET", "/x", nil).WithContext(idp.NewContext(t.Context(), v.Identity))
	if v2 := p.Authorize(inner); !v2.Allowed() || v2.Identity != v.Identity {
		t.Fatalf("context identity not reused: %v", v2.Err)
	}
	if v3 := p.Authorize(inner, idp.RequireRoles(idp.MatchAll, "admin")); v3.Outcome != idp.Forbidden {
		t.Fatalf("guard on a context identity: %s", v3.Outcome)
	}
	if id, ok := idp.IdentityFrom(inner.Context()); !ok || id != v.Identity {
		t.Fatal("IdentityFrom")
	}
}

// A token outside RFC 6750's syntax is "malformed token" whether the
// syntax check or the JWS parser refuses it (the parser alone, once the
// keys are loaded), and so is a token in the syntax that is no JWS.
func TestMalformedTokenOneRefusal(t *testing.T) {
	srv := idptest.NewServer(t, idptest.Options{})
	p := newPlugin(t, srv, nil)
	good := srv.Mint(srv.UserClaims(clientID, "alice", "creator"))
	for _, tok := range []string{"a!b.c.d", good[:10] + "~" + good[11:], good + "=", "abc", "a.b", "a.b.c.d", "+/+.+/+.+/+",
		strings.Replace(good, ".", "..", 1), good[:len(good)-1] + "\x7f"} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		v := p.Authorize(r)
		if v.Outcome != idp.InvalidToken || idp.Reason(v.Err) != "malformed token" {
			t.Errorf("%q: outcome %v, reason %q; want invalid, malformed token", tok, v.Outcome, idp.Reason(v.Err))
		}
	}
}
