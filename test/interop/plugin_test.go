package interop_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/shortener"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/idpauth"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/memstore"
)

// These tests use pkg/idp in-process (the library mode of DESIGN §1) against
// the real provider: the same checks as idp-proxy, without its binary.

// unusedRedirect is registered at the provider for the browserless code
// flow: the client stops at the redirect, nothing listens there.
const unusedRedirect = "http://127.0.0.1:9/interop/callback"

func newPlugin(t *testing.T, serverURL string, optional []string, waitReady bool) *idp.Plugin {
	t.Helper()
	// ctx bounds the plugin's background key refreshes: the test's lifetime.
	pl, err := idp.New(t.Context(), idp.Config{
		ServerURL:         serverURL,
		Realm:             realm,
		ClientID:          clientID,
		OptionalAudiences: optional,
		HTTPTimeout:       5 * time.Second,
	})
	if err != nil {
		t.Fatalf("idp.New: %v", err)
	}
	t.Cleanup(func() { _ = pl.Close() })
	if waitReady {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		if err := pl.WaitReady(ctx); err != nil {
			t.Fatalf("plugin not ready: %v", err)
		}
	}
	return pl
}

// app is the shortener's real handler behind the plugin: creating a link
// needs realm role creator, GET /editor needs client role shortener/editor,
// GET /me echoes the identity, redirects are public.
func app(t *testing.T, pl *idp.Plugin) (*httptest.Server, *shortener.Service) {
	t.Helper()
	svc, err := shortener.New(memstore.New(), shortener.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := shortener.NewHandler(svc, shortener.HandlerOptions{Owner: idpauth.Owner})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /shorten", pl.Require(idp.RequireRoles(idp.MatchAll, "creator"))(h))
	mux.Handle("GET /editor", pl.Require(idp.RequireClientRoles(clientID, idp.MatchAll, "editor"))(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })))
	mux.Handle("GET /me", pl.WithUser(func(w http.ResponseWriter, r *http.Request, u *idp.User) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(u)
	}))
	mux.Handle("GET /{code}", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, svc
}

// created checks a 201 answer of POST /shorten and returns the short code.
func created(t *testing.T, a answer) string {
	t.Helper()
	if a.Status != http.StatusCreated {
		t.Fatalf("POST /shorten: want 201, got %s", a)
	}
	var doc struct {
		ShortCode string `json:"short_code"`
		ShortURL  string `json:"short_url"`
		URL       string `json:"url"`
	}
	if err := json.Unmarshal(a.Body, &doc); err != nil || doc.ShortCode == "" {
		t.Fatalf("POST /shorten body %s: %v", a.Body, err)
	}
	return doc.ShortCode
}

// refused checks a 401/403 answer: problem+json and the RFC 6750 challenge.
func refused(t *testing.T, a answer, status int, wantError string) {
	t.Helper()
	refusedIn(t, a, status, wantError, realm)
}

// refusedIn is refused with the challenge's realm: the issuer for a
// provider named by idp.issuer_url.
func refusedIn(t *testing.T, a answer, status int, wantError, realm string) {
	t.Helper()
	if a.Status != status {
		t.Fatalf("want %d, got %s", status, a)
	}
	if ct := a.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	ch := a.Header.Get("WWW-Authenticate")
	if !strings.HasPrefix(ch, "Bearer ") || !strings.Contains(ch, `realm="`+realm+`"`) {
		t.Errorf("WWW-Authenticate %q", ch)
	}
	if wantError != "" && !strings.Contains(ch, `error="`+wantError+`"`) {
		t.Errorf("WWW-Authenticate %q lacks error=%q", ch, wantError)
	}
	if strings.Contains(string(a.Body), "eyJ") {
		t.Errorf("error body leaks a token: %s", a.Body)
	}
}

func TestPluginAgainstProvider(t *testing.T) {
	t.Parallel()
	requireTools(t, needProvider)
	p := startProvider(t, providerOptions{RedirectURIs: []string{unusedRedirect}})

	svcTok := serviceToken(t, p)
	// What the provider puts into a service token (Keycloak's shape, DESIGN §10):
	// aud "account", azp the service client, its service account's roles.
	sc := claims(t, svcTok)
	if sc["aud"] != "account" || sc["azp"] != svcClientID || sc["preferred_username"] != "service-account-"+svcClientID {
		t.Fatalf("service token claims: %v", sc)
	}
	if ra, _ := sc["realm_access"].(map[string]any); ra == nil || !slices.Contains(ra["roles"].([]any), any("creator")) {
		t.Fatalf("service token lacks realm role creator: %v", sc)
	}
	alice := userToken(t, p, unusedRedirect, "alice", "alice-password")
	bob := userToken(t, p, unusedRedirect, "bob", "bob-password")
	aliceID, _ := alice.Extra("id_token").(string)

	withSvc, svc := app(t, newPlugin(t, p.ServerURL(), []string{svcClientID}, true))
	strict, _ := app(t, newPlugin(t, p.ServerURL(), nil, true))
	link := map[string]string{"url": "https://example.com/interop?x=1"}

	t.Run("service token accepted through optional_audiences creates a link", func(t *testing.T) {
		code := created(t, call(t, "POST", withSvc.URL+"/shorten", svcTok, link))
		l, err := svc.Resolve(t.Context(), code)
		if err != nil || l.CreatedBy != sc["sub"] {
			t.Fatalf("link %+v (%v): want created_by %v", l, err, sc["sub"])
		}
		if a := call(t, "GET", withSvc.URL+"/"+code, "", nil); a.Status != http.StatusFound || a.Header.Get("Location") != link["url"] {
			t.Fatalf("GET /%s: %s Location %q", code, a, a.Header.Get("Location"))
		}
	})
	t.Run("service token refused without optional_audiences", func(t *testing.T) {
		refused(t, call(t, "POST", strict.URL+"/shorten", svcTok, link), http.StatusUnauthorized, "invalid_token")
	})
	t.Run("user token with role creates a link", func(t *testing.T) {
		for _, srv := range []*httptest.Server{withSvc, strict} {
			created(t, call(t, "POST", srv.URL+"/shorten", alice.AccessToken, link))
		}
	})
	t.Run("user token without role gets 403", func(t *testing.T) {
		refused(t, call(t, "POST", withSvc.URL+"/shorten", bob.AccessToken, link), http.StatusForbidden, "insufficient_scope")
	})
	t.Run("client role guard", func(t *testing.T) {
		if a := call(t, "GET", withSvc.URL+"/editor", alice.AccessToken, nil); a.Status != http.StatusNoContent {
			t.Fatalf("alice: %s", a)
		}
		refused(t, call(t, "GET", withSvc.URL+"/editor", bob.AccessToken, nil), http.StatusForbidden, "insufficient_scope")
		refused(t, call(t, "GET", withSvc.URL+"/editor", svcTok, nil), http.StatusForbidden, "insufficient_scope")
	})
	t.Run("identity from the provider's claims", func(t *testing.T) {
		a := call(t, "GET", withSvc.URL+"/me", alice.AccessToken, nil)
		var u idp.User
		if a.Status != http.StatusOK || json.Unmarshal(a.Body, &u) != nil {
			t.Fatalf("GET /me: %s", a)
		}
		if u.PreferredUsername != "alice" || u.Email != "alice@example.com" || !u.HasRole("creator") ||
			!u.HasClientRole(clientID, "editor") || !u.HasScope("profile") || u.Sub == "" {
			t.Fatalf("alice's identity: %+v", u)
		}
	})
	t.Run("ID token as access token 401", func(t *testing.T) {
		// DESIGN §10: an ID token may not pass as an access token. Keycloak's
		// carry typ "ID"; this provider's, like most non-Keycloak providers',
		// carry no typ at all, only ID-token claims (nonce, at_hash, auth_time).
		if aliceID == "" {
			t.Fatal("the provider issued no ID token")
		}
		refused(t, call(t, "GET", withSvc.URL+"/me", aliceID, nil), http.StatusUnauthorized, "invalid_token")
	})
	t.Run("no token 401", func(t *testing.T) {
		refused(t, call(t, "POST", withSvc.URL+"/shorten", "", link), http.StatusUnauthorized, "")
	})
	for name, tok := range map[string]string{
		"junk":             "not-a-token",
		"junk JWT":         "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln",
		"tampered":         tamper(svcTok),
		"refresh token":    alice.RefreshToken,
		"corrupted header": strings.Replace(svcTok, ".", "x.", 1),
	} {
		t.Run(name+" 401", func(t *testing.T) {
			if tok == "" {
				t.Fatal("the provider issued no such token")
			}
			refused(t, call(t, "POST", withSvc.URL+"/shorten", tok, link), http.StatusUnauthorized, "invalid_token")
		})
	}
}

// tamper flips the last character of the payload.
func tamper(jwt string) string {
	parts := strings.Split(jwt, ".")
	b := []byte(parts[1])
	if b[len(b)-1] == 'A' {
		b[len(b)-1] = 'B'
	} else {
		b[len(b)-1] = 'A'
	}
	return parts[0] + "." + string(b) + "." + parts[2]
}

func TestPluginProviderOutageAndKeyRotation(t *testing.T) {
	t.Parallel()
	requireTools(t, needProvider)
	dir := t.TempDir()
	port := freePort(t)
	serverURL := "http://127.0.0.1:" + strconv.Itoa(port)
	link := map[string]string{"url": "https://example.com/rotation"}

	// Provider down at start: 503 with Retry-After, not ready; then recovery
	// without a restart once the provider is up.
	pl := newPlugin(t, serverURL, []string{svcClientID}, false)
	srv, _ := app(t, pl)
	if a := call(t, "POST", srv.URL+"/shorten", "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", link); a.Status != http.StatusServiceUnavailable || a.Header.Get("Retry-After") == "" {
		t.Fatalf("provider down at start: want 503 with Retry-After, got %s %v", a, a.Header)
	}
	if pl.Ready() {
		t.Fatal("Ready() with the provider down")
	}
	p1 := startProvider(t, providerOptions{Port: port, KeysFile: filepath.Join(dir, "keys-1.json")})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := pl.WaitReady(ctx); err != nil {
		t.Fatalf("no recovery after the provider came up: %v", err)
	}
	first := serviceToken(t, p1)
	created(t, call(t, "POST", srv.URL+"/shorten", first, link))
	unseen := serviceToken(t, p1) // never presented while the provider is up

	// Provider down after start: the cached keys keep working, also for a
	// token the plugin has never verified.
	p1.stop()
	created(t, call(t, "POST", srv.URL+"/shorten", unseen, link))
	created(t, call(t, "POST", srv.URL+"/shorten", first, link))

	// Key rotation: the provider comes back on the same port with new keys;
	// the first token with the new kid makes the plugin refetch the JWKS.
	p2 := startProvider(t, providerOptions{Port: port, KeysFile: filepath.Join(dir, "keys-2.json")})
	if slices.Equal(p1.KIDs, p2.KIDs) {
		t.Fatalf("rotation kept the kids %v", p2.KIDs)
	}
	rotated := serviceToken(t, p2)
	created(t, call(t, "POST", srv.URL+"/shorten", rotated, link))
	// The old key is gone from the JWKS: its tokens no longer pass.
	refused(t, call(t, "POST", srv.URL+"/shorten", first, link), http.StatusUnauthorized, "invalid_token")
	if st := pl.Stats(); st.Keys.Refreshes < 2 {
		t.Fatalf("want at least two key-set fetches (start, rotation), got %+v", st.Keys)
	}
}
