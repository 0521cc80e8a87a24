package cli

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/memstore"
)

func TestIDPFlags(t *testing.T) {
	t.Setenv("SHORTENER_IDP_OPTIONAL_AUDIENCES", "account, other")
	cfg, err := capture(t, "--idp-server-url", "http://127.0.0.1:1", "--idp-realm", "demo",
		"--idp-client-id", "shortener", "--idp-create-roles", "creator,admin")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.IDPServerURL != "http://127.0.0.1:1" || cfg.IDPRealm != "demo" || cfg.IDPClientID != "shortener" ||
		strings.Join(cfg.IDPOptionalAudiences, "|") != "account|other" || strings.Join(cfg.IDPCreateRoles, "|") != "creator|admin" {
		t.Fatalf("config = %+v", cfg)
	}
	for _, args := range [][]string{
		{"--idp-realm", "demo"}, // needs --idp-server-url
		{"--idp-server-url", "http://127.0.0.1:1", "--trust-identity-headers"},
	} {
		if _, err := capture(t, args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// TestInProcessIDP runs the API with pkg/idp in-process against idptest:
// creating needs a valid token with the role, the subject is recorded,
// redirects and health stay public, and an identity header is ignored.
func TestInProcessIDP(t *testing.T) {
	srv := idptest.NewServer(t)
	p, err := idp.New(t.Context(), idp.Config{
		ServerURL: srv.URL, Realm: srv.Realm, ClientID: "shortener", OptionalAudiences: []string{"account"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if err := p.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	st := memstore.New()
	cfg := config{MetricsListen: "off", BaseURL: "http://sho.rt", IDPServerURL: srv.URL, IDPCreateRoles: []string{"creator"}}
	h, _, err := newHandlers(cfg, st, p, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	alice := srv.Mint(srv.UserClaims("shortener", "alice", "creator"))
	bob := srv.Mint(srv.UserClaims("shortener", "bob"))

	shorten := func(token string, extra map[string]string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/shorten", strings.NewReader(`{"url":"https://example.com/a"}`))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for k, v := range extra {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := shorten("", nil); rec.Code != http.StatusUnauthorized || rec.Header().Get("WWW-Authenticate") == "" {
		t.Fatalf("no token: %d %q", rec.Code, rec.Header().Get("WWW-Authenticate"))
	}
	if rec := shorten("not-a-jwt", nil); rec.Code != http.StatusUnauthorized {
		t.Fatalf("junk token: %d", rec.Code)
	}
	if rec := shorten(bob, nil); rec.Code != http.StatusForbidden {
		t.Fatalf("bob without the role: %d", rec.Code)
	}
	rec := shorten(alice, map[string]string{"X-Auth-Request-User": "mallory"})
	if rec.Code != http.StatusCreated {
		t.Fatalf("alice: %d %s", rec.Code, rec.Body)
	}
	var out struct {
		ShortCode string `json:"short_code"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	l, err := st.Get(t.Context(), out.ShortCode)
	if err != nil {
		t.Fatal(err)
	}
	var tp *idp.TokenPayload
	if tp, err = p.Verify(t.Context(), alice); err != nil {
		t.Fatal(err)
	}
	if l.CreatedBy != tp.Subject || l.CreatedBy == "" {
		t.Fatalf("created_by = %q, want the token subject %q", l.CreatedBy, tp.Subject)
	}

	for _, target := range []string{"/" + out.ShortCode, "/health"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		if rec.Code != http.StatusFound && rec.Code != http.StatusOK {
			t.Errorf("GET %s without a token: %d", target, rec.Code)
		}
	}
	var _ shortener.Store = st
}
