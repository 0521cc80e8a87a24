package interop_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// These tests run the real cmd/idp-proxy in front of the real cmd/shortener
// (bbolt store, --trust-identity-headers) against the real provider.

func TestProxyEndToEnd(t *testing.T) {
	var tokens []string // every token used, none may be logged
	t.Parallel()
	requireTools(t, needProvider)
	proxyPort := freePort(t)
	p := startProvider(t, providerOptions{
		RedirectURIs: []string{"http://127.0.0.1:" + strconv.Itoa(proxyPort) + "/auth/callback"},
	})
	s := startStack(t, realmYAML(p.ServerURL()), proxyPort, true)
	link := map[string]string{"url": "https://example.com/e2e?q=1#frag"}
	svcTok := serviceToken(t, p)
	tokens = append(tokens, svcTok)

	t.Run("service token from a plain form POST creates a link, which redirects", func(t *testing.T) {
		a := call(t, "POST", s.Proxy+"/shorten", svcTok, link)
		code := created(t, a)
		var doc struct {
			ShortURL string `json:"short_url"`
		}
		if err := json.Unmarshal(a.Body, &doc); err != nil || doc.ShortURL != s.Proxy+"/"+code {
			t.Fatalf("short_url %q (%v), want %s/%s", doc.ShortURL, err, s.Proxy, code)
		}
		r := call(t, "GET", doc.ShortURL, "", nil)
		if r.Status != http.StatusFound || r.Header.Get("Location") != link["url"] {
			t.Fatalf("GET %s: %s Location %q", doc.ShortURL, r, r.Header.Get("Location"))
		}
	})
	t.Run("public health through the proxy", func(t *testing.T) {
		if a := call(t, "GET", s.Proxy+"/health", "", nil); a.Status != http.StatusOK || !strings.Contains(string(a.Body), "healthy") {
			t.Fatalf("GET /health: %s", a)
		}
	})
	t.Run("no token 401", func(t *testing.T) {
		refused(t, call(t, "POST", s.Proxy+"/shorten", "", link), http.StatusUnauthorized, "")
	})
	t.Run("junk token 401", func(t *testing.T) {
		refused(t, call(t, "POST", s.Proxy+"/shorten", "junk.junk.junk", link), http.StatusUnauthorized, "invalid_token")
	})

	// The login flow of idp-proxy's /auth routes, driven without a browser.
	alice := proxyLogin(t, s, "alice", "alice-password")
	bob := proxyLogin(t, s, "bob", "bob-password")
	tokens = append(tokens, alice.AccessToken, alice.RefreshToken, alice.IDToken, bob.AccessToken, bob.RefreshToken, bob.IDToken)

	t.Run("user with role creates a link", func(t *testing.T) {
		created(t, call(t, "POST", s.Proxy+"/shorten", alice.AccessToken, link))
	})
	t.Run("user without role gets 403", func(t *testing.T) {
		refused(t, call(t, "POST", s.Proxy+"/shorten", bob.AccessToken, link), http.StatusForbidden, "insufficient_scope")
	})
	t.Run("default_policy deny", func(t *testing.T) {
		if a := call(t, "GET", s.Proxy+"/not/a/route", alice.AccessToken, nil); a.Status != http.StatusForbidden {
			t.Fatalf("unmatched route: want 403, got %s", a)
		}
	})
	t.Run("refresh, then logout ends the session at the provider", func(t *testing.T) {
		a := call(t, "POST", s.Proxy+"/auth/refresh", "", map[string]string{"refresh_token": alice.RefreshToken})
		var fresh tokenDocument
		if a.Status != http.StatusOK || json.Unmarshal(a.Body, &fresh) != nil || fresh.AccessToken == "" {
			t.Fatalf("POST /auth/refresh: %s", a)
		}
		if fresh.AccessToken == alice.AccessToken {
			t.Fatal("refresh returned the same access token")
		}
		tokens = append(tokens, fresh.AccessToken, fresh.RefreshToken)
		created(t, call(t, "POST", s.Proxy+"/shorten", fresh.AccessToken, link))

		a = call(t, "POST", s.Proxy+"/auth/logout", "", map[string]string{"refresh_token": alice.RefreshToken})
		var out struct {
			LoggedOut      bool   `json:"logged_out"`
			ProviderLogout string `json:"provider_logout"`
		}
		if a.Status != http.StatusOK || json.Unmarshal(a.Body, &out) != nil || !out.LoggedOut || out.ProviderLogout != "done" {
			t.Fatalf("POST /auth/logout: %s", a)
		}
		// The provider has ended the session: its refresh token is dead.
		if a := call(t, "POST", s.Proxy+"/auth/refresh", "", map[string]string{"refresh_token": alice.RefreshToken}); a.Status != http.StatusUnauthorized {
			t.Fatalf("refresh after logout: want 401, got %s", a)
		}
	})
	t.Run("metrics", func(t *testing.T) {
		a := call(t, "GET", s.Ops+"/metrics", "", nil)
		for _, want := range []string{
			`idp_proxy_requests_total{decision=`,
			`rule="POST /shorten"`,
			"idp_proxy_jwks_ready 1",
		} {
			if a.Status != http.StatusOK || !strings.Contains(string(a.Body), want) {
				t.Errorf("GET /metrics: %d, lacks %q", a.Status, want)
			}
		}
	})
	t.Run("no token in the logs", func(t *testing.T) {
		s.checkNoTokensLogged(t, tokens...)
	})
}

func TestProxyProviderOutageAndKeyRotation(t *testing.T) {
	t.Parallel()
	requireTools(t, needProvider)
	dir := t.TempDir()
	providerPort := freePort(t)
	serverURL := "http://127.0.0.1:" + strconv.Itoa(providerPort)
	link := map[string]string{"url": "https://example.com/proxy-rotation"}

	// Provider down at start: the proxy starts, is not ready, answers 503
	// with Retry-After, and recovers without a restart.
	s := startStack(t, realmYAML(serverURL), freePort(t), false)
	if a := call(t, "GET", s.Ops+"/readyz", "", nil); a.Status != http.StatusServiceUnavailable {
		t.Fatalf("/readyz with the provider down: want 503, got %s", a)
	}
	if a := call(t, "POST", s.Proxy+"/shorten", "junk.junk.junk", link); a.Status != http.StatusServiceUnavailable || a.Header.Get("Retry-After") == "" {
		t.Fatalf("provider down at start: want 503 with Retry-After, got %s %v", a, a.Header)
	}
	p1 := startProvider(t, providerOptions{Port: providerPort, KeysFile: filepath.Join(dir, "keys-1.json")})
	waitHTTP(t, s.proxyProc, s.Ops+"/readyz", http.StatusOK)

	first := serviceToken(t, p1)
	created(t, call(t, "POST", s.Proxy+"/shorten", first, link))
	unseen := serviceToken(t, p1)

	// Provider down after start: the cached keys keep working.
	p1.stop()
	created(t, call(t, "POST", s.Proxy+"/shorten", unseen, link))
	created(t, call(t, "POST", s.Proxy+"/shorten", first, link))

	// Key rotation: same port, new keys; the still-running proxy picks them up.
	p2 := startProvider(t, providerOptions{Port: providerPort, KeysFile: filepath.Join(dir, "keys-2.json")})
	if slices.Equal(p1.KIDs, p2.KIDs) {
		t.Fatalf("rotation kept the kids %v", p2.KIDs)
	}
	created(t, call(t, "POST", s.Proxy+"/shorten", serviceToken(t, p2), link))
	refused(t, call(t, "POST", s.Proxy+"/shorten", first, link), http.StatusUnauthorized, "invalid_token")
	if s.proxyProc.exited() {
		t.Fatal("the proxy exited")
	}
}

// TestProxyPlainIssuer runs the provider as an issuer that is not a
// Keycloak realm (issuer http://127.0.0.1:PORT, endpoints under /oauth2,
// no /realms path anywhere) and idp-proxy with idp.issuer_url: bearer
// tokens, the login flow, refresh and logout all go through the endpoints
// of the discovery document.
func TestProxyPlainIssuer(t *testing.T) {
	var tokens []string
	t.Parallel()
	requireTools(t, needProvider)
	proxyPort := freePort(t)
	p := startProvider(t, providerOptions{
		Plain:        true,
		RedirectURIs: []string{"http://127.0.0.1:" + strconv.Itoa(proxyPort) + "/auth/callback"},
	})
	if strings.Contains(p.Issuer, "/realms/") {
		t.Fatalf("plain issuer %q", p.Issuer)
	}
	s := startStack(t, issuerYAML(p.Issuer), proxyPort, true)
	link := map[string]string{"url": "https://example.com/plain-issuer"}

	svcTok := serviceToken(t, p)
	tokens = append(tokens, svcTok)
	t.Run("service token", func(t *testing.T) {
		created(t, call(t, "POST", s.Proxy+"/shorten", svcTok, link))
	})
	t.Run("no token 401, the issuer as realm", func(t *testing.T) {
		refusedIn(t, call(t, "POST", s.Proxy+"/shorten", "", link), http.StatusUnauthorized, "", p.Issuer)
	})
	alice := proxyLogin(t, s, "alice", "alice-password")
	bob := proxyLogin(t, s, "bob", "bob-password")
	tokens = append(tokens, alice.AccessToken, alice.RefreshToken, alice.IDToken, bob.AccessToken, bob.RefreshToken, bob.IDToken)
	t.Run("user tokens from the login flow", func(t *testing.T) {
		created(t, call(t, "POST", s.Proxy+"/shorten", alice.AccessToken, link))
		refusedIn(t, call(t, "POST", s.Proxy+"/shorten", bob.AccessToken, link), http.StatusForbidden, "insufficient_scope", p.Issuer)
	})
	t.Run("refresh and logout at the discovered endpoints", func(t *testing.T) {
		a := call(t, "POST", s.Proxy+"/auth/refresh", "", map[string]string{"refresh_token": alice.RefreshToken})
		var fresh tokenDocument
		if a.Status != http.StatusOK || json.Unmarshal(a.Body, &fresh) != nil || fresh.AccessToken == "" {
			t.Fatalf("POST /auth/refresh: %s", a)
		}
		tokens = append(tokens, fresh.AccessToken, fresh.RefreshToken)
		a = call(t, "POST", s.Proxy+"/auth/logout", "", map[string]string{"refresh_token": alice.RefreshToken})
		var out struct {
			ProviderLogout string `json:"provider_logout"`
		}
		if a.Status != http.StatusOK || json.Unmarshal(a.Body, &out) != nil || out.ProviderLogout != "done" {
			t.Fatalf("POST /auth/logout: %s", a)
		}
	})
	t.Run("no token in the logs", func(t *testing.T) {
		s.checkNoTokensLogged(t, tokens...)
	})
}
