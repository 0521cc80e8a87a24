package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/assert"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
	"github.com/idp-proxy/idp-proxy/pkg/proxy"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/memstore"
)

func TestTrustIssuerFlags(t *testing.T) {
	cfg, err := capture(t, "--trust-issuer", "http://127.0.0.1:1/.idp-proxy", "--trust-audience", "shortener")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TrustIssuer != "http://127.0.0.1:1/.idp-proxy" || cfg.TrustAudience != "shortener" || cfg.AssertionHeader != "X-Auth-Request-Assertion" {
		t.Fatalf("config = %+v", cfg)
	}
	for _, args := range [][]string{
		{"--trust-issuer", "http://127.0.0.1:1"}, // no audience
		{"--trust-audience", "shortener"},        // no issuer
		{"--trust-issuer", "http://127.0.0.1:1", "--trust-audience", "s", "--trust-identity-headers"},
		{"--trust-issuer", "http://127.0.0.1:1", "--trust-audience", "s", "--idp-issuer-url", "http://127.0.0.1:2", "--idp-client-id", "c"},
		{"--trust-issuer", "http://127.0.0.1:1", "--trust-audience", "s", "--assertion-header", "a b"},
	} {
		if _, err := capture(t, args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

func mustECKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestTrustIssuerRefusesForgeries: with --trust-issuer the shortener takes
// the caller from the assertion alone. Identity headers, an assertion of
// another key, for another audience, expired, with alg none, and the
// caller's own token are refused (401); the real assertion creates a link
// owned by its subject.
func TestTrustIssuerRefusesForgeries(t *testing.T) {
	var signer *assert.Signer
	issuer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { signer.Handler().ServeHTTP(w, r) }))
	t.Cleanup(issuer.Close)
	now := time.Now()
	newSigner := func(key *ecdsa.PrivateKey, at time.Time) *assert.Signer {
		s, err := assert.NewSigner(assert.Options{Issuer: issuer.URL, Keys: []assert.Key{{Signer: key}}, Now: func() time.Time { return at }})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	key := mustECKey(t)
	signer = newSigner(key, now)
	cfg := config{MetricsListen: "off", BaseURL: "http://sho.rt", TrustIssuer: issuer.URL, TrustAudience: "shortener", AssertionHeader: "X-Auth-Request-Assertion"}
	p, err := newAssertionVerifier(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if err := p.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	st := memstore.New()
	h, _, err := newHandlers(cfg, st, p, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	shorten := func(hdr map[string]string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/shorten", strings.NewReader(`{"url":"https://example.com/a"}`))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	claims := assert.Claims{Audience: "shortener", Subject: "user-alice", Username: "alice"}
	sign := func(s *assert.Signer, c assert.Claims) string {
		raw, _, err := s.Sign(c)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	otherKey := sign(newSigner(mustECKey(t), now), claims)
	wrongAud := sign(signer, assert.Claims{Audience: "wiki", Subject: "user-alice"})
	expired := sign(newSigner(key, now.Add(-time.Hour)), claims)
	none := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"iss": issuer.URL, "aud": "shortener", "sub": "user-alice", "exp": now.Add(time.Minute).Unix()})
	noneRaw, _ := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	provider := idptest.NewServer(t)
	callers := provider.MintWith(idptest.MintOptions{Alg: "ES256"}, map[string]any{"aud": "shortener", "sub": "user-alice"})
	for name, hdr := range map[string]map[string]string{
		"identity headers only":  {"X-Auth-Request-User": "user-alice", "X-Auth-Request-Roles": "admin"},
		"another key":            {"X-Auth-Request-Assertion": otherKey},
		"wrong aud":              {"X-Auth-Request-Assertion": wrongAud},
		"expired":                {"X-Auth-Request-Assertion": expired},
		"alg none":               {"X-Auth-Request-Assertion": noneRaw},
		"the caller's own token": {"X-Auth-Request-Assertion": callers},
		"the token as bearer":    {"Authorization": "Bearer " + callers},
	} {
		if rec := shorten(hdr); rec.Code != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", name, rec.Code)
		}
	}
	rec := shorten(map[string]string{"X-Auth-Request-Assertion": sign(signer, claims), "X-Auth-Request-User": "mallory"})
	if rec.Code != http.StatusCreated {
		t.Fatalf("the real assertion: %d %s", rec.Code, rec.Body)
	}
	var out struct {
		ShortCode string `json:"short_code"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	if l, err := st.Get(t.Context(), out.ShortCode); err != nil || l.CreatedBy != "user-alice" {
		t.Fatalf("created_by %q (%v), want the assertion's subject", l.CreatedBy, err)
	}
}

// TestTrustIssuerBehindProxy runs the shortener behind a real idp-proxy
// whose upstream credential is assertion: the user's token creates a link
// owned by its subject, and the shortener never sees the token.
func TestTrustIssuerBehindProxy(t *testing.T) {
	provider := idptest.NewServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuerURL := "http://" + ln.Addr().String() + "/.idp-proxy"
	st := memstore.New()
	var api http.Handler
	var sawToken bool
	alice := provider.Mint(provider.UserClaims("shortener", "alice", "creator"))
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, vs := range r.Header {
			for _, v := range vs {
				sawToken = sawToken || strings.Contains(v, alice)
			}
		}
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)

	pc := proxy.DefaultConfig()
	pc.Upstream.URL, pc.Upstream.Credential, pc.Upstream.Audience = up.URL, proxy.CredentialAssertion, "shortener"
	pc.Assertion.IssuerURL, pc.Assertion.KeyFile = issuerURL, filepath.Join(t.TempDir(), "keys.pem")
	plugin, err := idp.New(t.Context(), idp.Config{ServerURL: provider.URL, Realm: provider.Realm, ClientID: "shortener", OptionalAudiences: []string{"account"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plugin.Close() })
	px, err := proxy.New(plugin, pc, proxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ps := httptest.NewUnstartedServer(px)
	ps.Listener.Close()
	ps.Listener = ln
	ps.Start()
	t.Cleanup(ps.Close)

	cfg := config{MetricsListen: "off", BaseURL: "http://sho.rt", TrustIssuer: issuerURL, TrustAudience: "shortener", AssertionHeader: "X-Auth-Request-Assertion"}
	verifier, err := newAssertionVerifier(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = verifier.Close() })
	if api, _, err = newHandlers(cfg, st, verifier, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", ps.URL+"/shorten", strings.NewReader(`{"url":"https://example.com/a"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		ShortCode string `json:"short_code"`
	}
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&out) != nil {
		t.Fatalf("through the proxy: %d", resp.StatusCode)
	}
	if l, err := st.Get(t.Context(), out.ShortCode); err != nil || l.CreatedBy != "user-alice" {
		t.Fatalf("created_by %q (%v)", l.CreatedBy, err)
	}
	if sawToken {
		t.Error("the shortener received the caller's token")
	}
}
