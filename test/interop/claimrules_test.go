package interop_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// entraTenantID is the tid of the Entra-shaped tokens of provider/server.mjs.
const entraTenantID = "9e1f2d3c-4b5a-4968-8776-a5b4c3d2e1f0"

// Rules on any claim and headers from any claim against the Entra-shaped
// provider: a tenant rule on tid admits its tokens and refuses those a
// rule for another tenant expects (403 naming the clause, never the
// value); e-mail domain rules need email_verified, which Entra never
// sends; the tenant and the group object IDs reach the upstream as claim
// headers, and a client's own copies of those headers never do.
func TestProxyClaimRules(t *testing.T) {
	t.Parallel()
	requireTools(t, needProvider)
	port := freePort(t)
	p := startProvider(t, providerOptions{
		Plain: true, Shape: "entra",
		RedirectURIs: []string{"http://127.0.0.1:" + strconv.Itoa(port) + "/auth/callback"},
	})
	base, up, px := shapedProxy(t, p, port, "{preset: generic}", `  - match: GET /tenant/
    claims:
      tid: ["`+entraTenantID+`"]
  - match: GET /other-tenant/
    claims:
      tid: ["00000000-0000-0000-0000-000000000000"]
  - match: GET /staff/
    email_domains: [example.com]
headers:
  claims:
    X-Auth-Request-Tenant: tid
    X-Auth-Request-Groups: groups
`)
	s := &stack{Proxy: base}
	alice := proxyCallback(t, s, "alice", alicePassword)

	t.Run("the tenant rule admits its tenant; claim headers reach the upstream", func(t *testing.T) {
		status, e := echoed(t, base+"/tenant/data", alice.AccessToken)
		if status != http.StatusOK {
			t.Fatalf("GET /tenant/ as alice: %d", status)
		}
		if len(e.Tenant) != 1 || e.Tenant[0] != entraTenantID {
			t.Errorf("X-Auth-Request-Tenant %q, want [%s]", e.Tenant, entraTenantID)
		}
		if want := auditorsGroupID + ",c0d4e8f2-3a1b-4e7d-9c5f-8b2a6d1e0f34"; len(e.Groups) != 1 || e.Groups[0] != want {
			t.Errorf("X-Auth-Request-Groups %q, want [%s]", e.Groups, want)
		}
		svc := serviceToken(t, p)
		status, e = echoed(t, base+"/tenant/data", svc)
		if status != http.StatusOK || len(e.Tenant) != 1 || e.Tenant[0] != entraTenantID || e.Groups != nil {
			t.Errorf("GET /tenant/ with the app token: %d, upstream saw tenant %q groups %q", status, e.Tenant, e.Groups)
		}
	})
	t.Run("another tenant's rule: 403 naming the clause", func(t *testing.T) {
		a := call(t, "GET", base+"/other-tenant/data", alice.AccessToken, nil)
		if a.Status != http.StatusForbidden || !strings.Contains(string(a.Body), `"clause":"claims:tid"`) {
			t.Errorf("GET /other-tenant/: %s", a)
		}
		if strings.Contains(string(a.Body), entraTenantID) {
			t.Errorf("the 403 leaks the token's tenant: %s", a.Body)
		}
	})
	t.Run("email_domains needs email_verified, which Entra does not send", func(t *testing.T) {
		a := call(t, "GET", base+"/staff/data", alice.AccessToken, nil)
		if a.Status != http.StatusForbidden || !strings.Contains(string(a.Body), `"clause":"email_domains"`) {
			t.Errorf("GET /staff/: %s", a)
		}
	})
	t.Run("a client's claim headers never reach the upstream", func(t *testing.T) {
		// (the spellings with '_' are pkg/proxy's tests: this upstream
		// would not read them as these headers)
		req, err := http.NewRequest("GET", base+"/tenant/data", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+alice.AccessToken)
		req.Header["X-Auth-Request-Tenant"] = []string{"spoofed"}
		req.Header["x-auth-request-groups"] = []string{"spoofed"} // sent as written; the upstream reads it as X-Auth-Request-Groups
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		seen := up.requests()
		last := seen[len(seen)-1]
		if resp.StatusCode != http.StatusOK || len(last.Tenant) != 1 || last.Tenant[0] != entraTenantID || len(last.Groups) != 1 || strings.Contains(last.Groups[0], "spoofed") {
			t.Errorf("%d, upstream saw tenant %q groups %q", resp.StatusCode, last.Tenant, last.Groups)
		}
	})
	checkNoTokens(t, px)
}
