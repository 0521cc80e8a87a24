package interop_test

import (
	"net/http"
	"testing"
)

// TestShortenerInProcessIDP runs the real cmd/shortener in its in-process
// pkg/idp mode (--idp-*), without idp-proxy, against the real provider.
func TestShortenerInProcessIDP(t *testing.T) {
	t.Parallel()
	requireTools(t, needProvider)
	p := startProvider(t, providerOptions{RedirectURIs: []string{unusedRedirect}})
	base, _ := startShortener(t,
		"--idp-server-url", p.ServerURL(),
		"--idp-realm", realm,
		"--idp-client-id", clientID,
		"--idp-optional-audiences", svcClientID,
		"--idp-create-roles", "creator",
	)
	link := map[string]string{"url": "https://example.com/in-process"}
	alice := userToken(t, p, unusedRedirect, "alice", "alice-password")
	bob := userToken(t, p, unusedRedirect, "bob", "bob-password")

	code := created(t, call(t, "POST", base+"/shorten", serviceToken(t, p), link))
	if a := call(t, "GET", base+"/"+code, "", nil); a.Status != http.StatusFound || a.Header.Get("Location") != link["url"] {
		t.Fatalf("GET /%s: %s", code, a)
	}
	created(t, call(t, "POST", base+"/shorten", alice.AccessToken, link))
	refused(t, call(t, "POST", base+"/shorten", bob.AccessToken, link), http.StatusForbidden, "insufficient_scope")
	refused(t, call(t, "POST", base+"/shorten", "", link), http.StatusUnauthorized, "")
	refused(t, call(t, "POST", base+"/shorten", "junk", link), http.StatusUnauthorized, "invalid_token")
	if a := call(t, "GET", base+"/health", "", nil); a.Status != http.StatusOK {
		t.Fatalf("GET /health: %s", a)
	}
}
