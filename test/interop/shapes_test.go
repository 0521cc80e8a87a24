package interop_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// The provider as other vendors shape their tokens, with idp-proxy's claim
// mapping configured as the README's "Providers" section shows: Microsoft
// Entra ID (app roles, group object IDs, scp, a pairwise sub beside oid)
// and Auth0 (an issuer ending in "/", roles in a namespaced claim,
// permissions instead of scopes). Neither token has realm_access.

// Group object IDs and the oid of the service account, as
// provider/server.mjs issues them.
const (
	auditorsGroupID = "5b3c7e1a-9d2f-4c8b-a6e0-1f4d3b2a9c71"
	aliceID         = "f3b5a9d2-4c1e-4f6a-9b7d-2e8c1a0d5a11"
	svcID           = "7d2e9c4a-1b3f-4a5e-8c6d-9e0f1a2b3c4d"
)

// shapedProxy runs idp-proxy for the provider p in front of an echo
// upstream with the claim mapping claims (one YAML flow mapping) and
// rules (whole lines), and returns its URL and process.
func shapedProxy(t *testing.T, p *provider, port int, claims, rules string) (string, *echoUpstream, *proc) {
	t.Helper()
	up := startEchoUpstream(t, "app")
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	opsAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	yaml := proxyYAMLHead("127.0.0.1:"+strconv.Itoa(port), opsAddr, up.URL, issuerYAML(p.Issuer), base,
		"  claims: "+claims+"\n") + "routes:\n" + rules + `default_policy: deny
log:
  format: json
  level: debug
`
	return base, up, startProxyYAML(t, "idp-proxy", yaml, opsAddr)
}

// echoed calls GET url with token and returns the status and, on 200,
// what the upstream received.
func echoed(t *testing.T, url, token string) (int, echo) {
	t.Helper()
	a := call(t, "GET", url, token, nil)
	var e echo
	if a.Status == http.StatusOK {
		if err := json.Unmarshal(a.Body, &e); err != nil {
			t.Fatalf("GET %s: %s: %v", url, a, err)
		}
	}
	return a.Status, e
}

// wantStatus checks the status of GET url with token for each
// path → status.
func wantStatus(t *testing.T, base, token string, want map[string]int) {
	t.Helper()
	for path, status := range want {
		if got, _ := echoed(t, base+path, token); got != status {
			t.Errorf("GET %s: %d, want %d", path, got, status)
		}
	}
}

func TestProxyEntraShapedIssuer(t *testing.T) {
	t.Parallel()
	requireTools(t, needProvider)
	port := freePort(t)
	p := startProvider(t, providerOptions{
		Plain: true, Shape: "entra",
		RedirectURIs: []string{"http://127.0.0.1:" + strconv.Itoa(port) + "/auth/callback"},
	})
	base, _, px := shapedProxy(t, p, port, "{preset: generic}", `  - match: GET /app/
    roles: [creator]
  - match: GET /read/
    scopes: [links.read]
  - match: GET /audit/
    groups: [`+auditorsGroupID+`]
`)
	s := &stack{Proxy: base}

	t.Run("an app token: app roles, its sub as the username (it has no preferred_username)", func(t *testing.T) {
		svc := serviceToken(t, p)
		status, e := echoed(t, base+"/app/data", svc)
		if status != http.StatusOK || e.Username != e.User || e.Roles != "creator" || e.User == "" || e.User == svcID {
			t.Errorf("GET /app/ with the app token: %d, upstream saw %+v", status, e)
		}
		wantStatus(t, base, svc, map[string]int{"/read/data": http.StatusForbidden, "/audit/data": http.StatusForbidden})
	})
	t.Run("user tokens: roles, scp array, group object IDs", func(t *testing.T) {
		alice := proxyCallback(t, s, "alice", alicePassword)
		status, e := echoed(t, base+"/app/data", alice.AccessToken)
		if status != http.StatusOK || e.Username != "alice@example.com" || e.Roles != "creator" {
			t.Errorf("GET /app/ as alice: %d, upstream saw %+v", status, e)
		}
		wantStatus(t, base, alice.AccessToken, map[string]int{"/read/data": http.StatusOK, "/audit/data": http.StatusOK})
		bob := proxyCallback(t, s, "bob", "bob-password")
		wantStatus(t, base, bob.AccessToken, map[string]int{
			"/app/data": http.StatusForbidden, "/read/data": http.StatusOK, "/audit/data": http.StatusForbidden,
		})
	})
	t.Run("no token 401", func(t *testing.T) {
		wantStatus(t, base, "", map[string]int{"/app/data": http.StatusUnauthorized})
	})
	checkNoTokens(t, px)
}

func TestProxyAuth0ShapedIssuer(t *testing.T) {
	t.Parallel()
	requireTools(t, needProvider)
	port := freePort(t)
	p := startProvider(t, providerOptions{
		Plain: true, Shape: "auth0",
		RedirectURIs: []string{"http://127.0.0.1:" + strconv.Itoa(port) + "/auth/callback"},
	})
	if !strings.HasSuffix(p.Issuer, "/") {
		t.Fatalf("an Auth0-shaped issuer ends in a slash: %q", p.Issuer)
	}
	// Ready means discovery at {issuer without its slash}/.well-known/...
	// named this issuer exactly.
	base, _, px := shapedProxy(t, p, port, `{preset: generic, roles: "https://idp-proxy.test/roles", scopes: permissions}`,
		`  - match: GET /app/
    roles: [creator]
  - match: GET /read/
    scopes: ["read:links"]
`)
	s := &stack{Proxy: base}

	t.Run("a machine token: namespaced roles, sub as the username", func(t *testing.T) {
		svc := serviceToken(t, p)
		status, e := echoed(t, base+"/app/data", svc)
		if status != http.StatusOK || e.Username != svcClientID+"@clients" || e.Roles != "creator" {
			t.Errorf("GET /app/ with the machine token: %d, upstream saw %+v", status, e)
		}
		wantStatus(t, base, svc, map[string]int{"/read/data": http.StatusForbidden})
	})
	t.Run("user tokens: namespaced roles, permissions as scopes", func(t *testing.T) {
		alice := proxyCallback(t, s, "alice", alicePassword)
		status, e := echoed(t, base+"/app/data", alice.AccessToken)
		if status != http.StatusOK || e.Username != "auth0|"+aliceID || e.Roles != "creator" {
			t.Errorf("GET /app/ as alice: %d, upstream saw %+v", status, e)
		}
		wantStatus(t, base, alice.AccessToken, map[string]int{"/read/data": http.StatusOK})
		bob := proxyCallback(t, s, "bob", "bob-password")
		wantStatus(t, base, bob.AccessToken, map[string]int{"/app/data": http.StatusForbidden, "/read/data": http.StatusOK})
	})
	checkNoTokens(t, px)
}

// TestBrowserSignInEntraShapedIssuer signs in with Chromium through a
// provider that is neither a Keycloak realm nor Keycloak-shaped: the
// endpoints come from discovery, the identity from the generic mapping.
func TestBrowserSignInEntraShapedIssuer(t *testing.T) {
	t.Parallel()
	requireTools(t, needProvider|needBrowser)
	port := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	p := startProvider(t, providerOptions{
		Plain: true, Shape: "entra",
		RedirectURIs:           []string{base + "/auth/callback"},
		PostLogoutRedirectURIs: []string{base + "/public/bye"},
	})
	up := startEchoUpstream(t, "app")
	px := startSessionProxy(t, sessionProxyOptions{
		name: "idp-proxy", port: port, publicURL: base, upstream: up.URL, store: "cookie",
		idp: issuerYAML(p.Issuer) + "  claims: {preset: generic}\n",
	})
	page := base + "/app/page?x=1"
	obs := runBrowser(t, []browserStep{
		{Do: "goto", URL: page},
		{Do: "login", Username: "alice", Password: alicePassword},
		{Do: "goto", URL: base + "/auth/logout", Until: base + "/public/bye"},
		{Do: "goto", URL: page},
	})
	checkSentToLogin(t, obs[0], page, "/app/page?x=1", p.Issuer)
	if o := obs[1]; o.URL != page || o.Status != http.StatusOK || o.Echo == nil ||
		o.Echo.Username != "alice@example.com" || o.Echo.Roles != "creator" || o.Echo.TokenFP == "" {
		t.Errorf("after sign-in: %s (%d), upstream saw %+v:%s", o.URL, o.Status, o.Echo, o.docChain())
	}
	if o := obs[2]; o.URL != base+"/public/bye" || !containsDoc(o, "GET", p.Issuer+"/oauth2/logout?", http.StatusOK) {
		t.Errorf("logout did not go through the discovered end-session endpoint to /public/bye:%s", o.docChain())
	}
	checkSentToLogin(t, obs[3], page, "/app/page?x=1", p.Issuer)
	checkNoTokens(t, px)
}
