package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// assertionProxy serves a proxy for s on a loopback listener whose URL is
// the assertions' issuer, with the key file in a temporary directory.
func assertionProxy(t *testing.T, s testSetup) (*Proxy, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	if s.Assertion.IssuerURL == "" {
		s.Assertion.IssuerURL = base + "/.idp-proxy"
	}
	if s.Assertion.KeyFile == "" {
		s.Assertion.KeyFile = filepath.Join(t.TempDir(), "assertion-keys.pem")
	}
	p, err := newProxy(t, s, Options{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := p.Plugin().WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(p)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return p, base
}

// assertionVerifier is what an upstream runs: a pkg/idp plugin whose
// issuer is the proxy.
func assertionVerifier(t *testing.T, issuer, audience string) *idp.Plugin {
	t.Helper()
	v, err := idp.New(t.Context(), idp.Config{IssuerURL: issuer, ClientID: audience,
		Algorithms: []string{"ES256"}, Claims: idp.ClaimMapping{Preset: idp.PresetGeneric}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := v.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return v
}

// leaks returns where the upstream's request holds token: a header (a
// cookie is in the Cookie header) or the body.
func leaks(got seen, token string) []string {
	var where []string
	for k, vals := range got.Header {
		for _, v := range vals {
			if strings.Contains(v, token) {
				where = append(where, k)
			}
		}
	}
	if strings.Contains(got.Body, token) {
		where = append(where, "body")
	}
	return where
}

// TestCredentialModesKeepTheToken sends the caller's token in every place
// a client may put it (Authorization, the token cookie, another cookie,
// headers the proxy does not know, in odd spellings, a POST body) and
// checks that with every mode but forward the upstream sees it nowhere,
// in header and cookie token locations, for the single upstream and for
// upstreams; exchange and client_credentials put their own token in
// Authorization, client_credentials the assertion too.
func TestCredentialModesKeepTheToken(t *testing.T) {
	srv := exchangeProvider(t)
	alice := userToken(srv, "alice", "")
	for _, mode := range []string{CredentialForward, CredentialNone, CredentialAssertion, CredentialExchange, CredentialClientCredentials} {
		for _, loc := range []string{"header", "cookie"} {
			for _, many := range []bool{false, true} {
				name := mode + "/" + loc
				if many {
					name += "/upstreams"
				}
				t.Run(name, func(t *testing.T) {
					up := newUpstream(t)
					s := testConfig(srv, up.URL)
					if loc == "cookie" {
						s.IDP.TokenLocation, s.IDP.CookieName = "cookie", "at"
					}
					s.IDP.ClientSecret = proxyClient.Secret
					uc := UpstreamConfig{URL: up.URL, Credential: mode}
					if mode == CredentialExchange || mode == CredentialClientCredentials {
						uc.Audience = "orders-api"
					}
					if many {
						s.Upstream.URL = ""
						s.Upstreams = []UpstreamRoute{{Match: "app.test/", UpstreamConfig: uc}}
					} else {
						s.Upstream = uc.Inherit(s.Upstream)
						s.Upstream.URL, s.Upstream.Audience = up.URL, uc.Audience
					}
					_, base := assertionProxy(t, s)
					hdr := map[string]string{
						"Cookie":          "theme=dark; at=" + alice + "; copy=" + alice,
						"X-Original-Auth": "Bearer " + alice,
						"X_Token_Copy":    alice,
						"Content-Type":    "text/plain",
					}
					token := alice
					if loc == "cookie" {
						token = "" // the cookie carries it
					}
					body := "a body"
					req, _ := http.NewRequest("POST", base+"/shorten", strings.NewReader(body))
					req.Host = "app.test"
					if token != "" {
						req.Header.Set("Authorization", "Bearer "+token)
					}
					for k, v := range hdr {
						req.Header[k] = []string{v}
					}
					resp, err := http.DefaultTransport.RoundTrip(req)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					if resp.StatusCode != 200 {
						t.Fatalf("status %d", resp.StatusCode)
					}
					got := up.last(t)
					where := leaks(got, alice)
					switch {
					case mode == CredentialForward && len(where) == 0 && loc == "header":
						t.Errorf("forward: the token is not forwarded (the search is broken)")
					case mode != CredentialForward && len(where) > 0:
						t.Errorf("the upstream received the caller's token in %v", where)
					}
					if got.Header.Get("X-Auth-Request-User") != "user-alice" || got.Body != body {
						t.Errorf("identity or body lost: %v %q", got.Header, got.Body)
					}
					if mode != CredentialForward && !strings.Contains(got.Header.Get("Cookie"), "theme=dark") {
						t.Errorf("other cookies lost: %q", got.Header.Get("Cookie"))
					}
					bearer := got.Header.Get("Authorization")
					if own := mode == CredentialExchange || mode == CredentialClientCredentials; own != (bearer != "") && mode != CredentialForward {
						t.Fatalf("mode %s: Authorization %q", mode, bearer)
					}
					a := got.Header.Get(DefaultAssertionHeader)
					if (mode == CredentialAssertion || mode == CredentialClientCredentials) != (a != "") {
						t.Fatalf("mode %s: assertion header %q", mode, a)
					}
					if a == "" {
						return
					}
					aud := up.URL
					if many {
						aud = "app.test"
					}
					if mode == CredentialClientCredentials {
						aud = "orders-api"
					}
					v := assertionVerifier(t, base+"/.idp-proxy", aud)
					id, err := v.VerifyIdentity(t.Context(), a)
					if err != nil {
						t.Fatalf("the upstream's verifier refuses the assertion: %v", err)
					}
					if id.User.Sub != "user-alice" || id.User.PreferredUsername != "alice" || !id.User.HasRole("creator") {
						t.Errorf("assertion user %+v", id.User)
					}
					if _, err := v.Verify(t.Context(), alice); !errors.Is(err, idp.ErrInvalidToken) {
						t.Errorf("the caller's own token passes the upstream's verifier: %v", err)
					}
				})
			}
		}
	}
}

// TestAssertionSignedOncePerToken: a repeated token is signed once per
// upstream; another token, or another upstream, is signed anew.
func TestAssertionSignedOncePerToken(t *testing.T) {
	srv := newProvider(t)
	a, b := newUpstream(t), newUpstream(t)
	s := testConfig(srv, "")
	s.Upstream.Credential = CredentialAssertion // inherited by both
	s.Upstreams = []UpstreamRoute{
		{Match: "a.test/", UpstreamConfig: UpstreamConfig{URL: a.URL}},
		{Match: "b.test/", UpstreamConfig: UpstreamConfig{URL: b.URL, Audience: "app-b"}},
	}
	p, base := assertionProxy(t, s)
	alice := srv.Mint(srv.UserClaims("shortener", "alice", "creator"))
	bob := srv.Mint(srv.UserClaims("shortener", "bob", "creator"))
	for range 5 {
		for _, host := range []string{"a.test", "b.test"} {
			if resp, _ := hostGet(t, base, host, "/api/v1/items/1", alice, nil); resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
		}
	}
	signed := func(i int) uint64 { return p.ups.all[i].headers.cred.cache.signed.Load() }
	if signed(0) != 1 || signed(1) != 1 {
		t.Errorf("5 requests of one token signed %d and %d times, want 1 each", signed(0), signed(1))
	}
	if a.last(t).Header.Get(DefaultAssertionHeader) == b.last(t).Header.Get(DefaultAssertionHeader) {
		t.Error("two upstreams share an assertion")
	}
	hostGet(t, base, "a.test", "/api/v1/items/1", bob, nil)
	if signed(0) != 2 {
		t.Errorf("a second token: %d signatures, want 2", signed(0))
	}
	if v := assertionVerifier(t, base+"/.idp-proxy", "app-b"); v != nil {
		if _, err := v.Verify(t.Context(), b.last(t).Header.Get(DefaultAssertionHeader)); err != nil {
			t.Errorf("configured audience: %v", err)
		}
	}
}

// TestAssertionHeaderNeverFromClient: the client's copies of the
// assertion header are stripped in every mode and spelling; with
// Authorization as the header the upstream gets "Bearer <assertion>".
func TestAssertionHeaderNeverFromClient(t *testing.T) {
	srv := newProvider(t)
	up := newUpstream(t)
	s := testConfig(srv, up.URL)
	s.Assertion.Header = "X-App-Assertion"
	_, base := assertionProxy(t, s)
	for _, k := range []string{"X-App-Assertion", "x_app_assertion", "X-Auth-Request-Assertion"} {
		if resp, _ := do(t, "GET", base+"/health", "", map[string]string{k: "forged"}, ""); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if got := leaks(up.last(t), "forged"); len(got) > 0 {
			t.Errorf("%s forwarded in %v", k, got)
		}
	}

	s = testConfig(srv, up.URL)
	s.Upstream.Credential = CredentialAssertion
	s.Assertion.Header = "Authorization"
	_, base = assertionProxy(t, s)
	alice := srv.Mint(srv.UserClaims("shortener", "alice", "creator"))
	do(t, "GET", base+"/api/v1/items/1", alice, nil, "")
	got := up.last(t).Header.Get("Authorization")
	if !strings.HasPrefix(got, "Bearer ") || strings.Contains(got, alice) {
		t.Fatalf("Authorization %q", got)
	}
	if _, err := assertionVerifier(t, base+"/.idp-proxy", up.URL).Verify(t.Context(), strings.TrimPrefix(got, "Bearer ")); err != nil {
		t.Error(err)
	}
}

func TestCredentialConfigErrors(t *testing.T) {
	srv := newProvider(t)
	dir := t.TempDir()
	badKeys := filepath.Join(dir, "bad.pem")
	_ = os.WriteFile(badKeys, []byte("not a key"), 0o600)
	for _, c := range []struct {
		name string
		edit func(*testSetup)
		key  string
		want string
	}{
		{"unknown", func(s *testSetup) { s.Upstream.Credential = "Forward" }, "Upstream.Credential", "want forward, none, assertion, exchange or client_credentials"},
		{"no issuer", func(s *testSetup) {
			s.Upstream.Credential = "assertion"
			s.Assertion.KeyFile = filepath.Join(dir, "k.pem")
		}, "Assertion.IssuerURL", "required"},
		{"no key file", func(s *testSetup) {
			s.Upstream.Credential = "assertion"
			s.Assertion.IssuerURL = "https://proxy.example.com"
		}, "Assertion.KeyFile", "required"},
		{"bad key file", func(s *testSetup) {
			s.Upstream.Credential = "assertion"
			s.Assertion.IssuerURL, s.Assertion.KeyFile = "https://proxy.example.com", badKeys
		}, "Assertion.KeyFile", "PRIVATE KEY"},
		{"http issuer", func(s *testSetup) {
			s.Upstream.Credential = "assertion"
			s.Assertion.IssuerURL, s.Assertion.KeyFile = "http://proxy.example.com", filepath.Join(dir, "k.pem")
		}, "Assertion.IssuerURL", "https"},
		{"audience without assertion", func(s *testSetup) { s.Upstream.Audience = "x" }, "Upstream.Audience", "set Upstream.Credential to one of them"},
		{"lifetime", func(s *testSetup) { s.Assertion.Lifetime = 2 * time.Hour }, "Assertion.Lifetime", "10s to 1h"},
		{"reserved header", func(s *testSetup) { s.Assertion.Header = "Cookie" }, "Assertion.Header", "choose another"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := testConfig(srv, "http://127.0.0.1:1")
			c.edit(&s)
			_, err := Compile(s.Config, s.IDP)
			var ke *FieldError
			if err == nil || !errors.As(err, &ke) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.key) {
				t.Fatalf("error %v, want one on %s saying %q", err, c.key, c.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "k.pem")); err == nil {
		t.Error("Compile (check-config) created a key file")
	}
}
