package proxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestForwardAuthVerdictCredential: the verdict carries the credential of
// the upstream the original request's host picks: the exchanged token or
// the proxy's own as Authorization (with the assertion for
// client_credentials), never the caller's token; a refused exchange is
// the 403.
func TestForwardAuthVerdictCredential(t *testing.T) {
	srv := exchangeProvider(t)
	s := exchangeSetup(srv, "http://upstream.invalid")
	s.ForwardAuth = ForwardAuthConfig{Enabled: true, TrustedCIDRs: []string{"10.0.0.0/8"}}
	p, _ := assertionProxy(t, s)
	alice := userToken(srv, "alice", "")
	verdict := func(host string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		p.ServeHTTP(w, verifyReq("/auth/verify", "10.0.0.1:1", map[string]string{
			"X-Forwarded-Host": host, "X-Forwarded-Uri": "/api/v1/items/1", "Authorization": "Bearer " + alice}))
		return w
	}
	for _, host := range []string{"orders.test", "robot.test"} {
		w := verdict(host)
		if w.Code != 200 {
			t.Fatalf("%s: %d %s", host, w.Code, w.Body)
		}
		for k, v := range w.Header() {
			if strings.Contains(strings.Join(v, ","), alice) {
				t.Errorf("%s: the verdict's %s holds the caller's token", host, k)
			}
		}
		bearer, ok := strings.CutPrefix(w.Header().Get("Authorization"), "Bearer ")
		if !ok || bearer == "" {
			t.Fatalf("%s: Authorization %q", host, w.Header().Get("Authorization"))
		}
		c := claimsOf(t, bearer)
		if host == "orders.test" && (c["aud"] != "orders-api" || c["sub"] != "user-alice") ||
			host == "robot.test" && c["sub"] != "service-shortener" {
			t.Errorf("%s: token claims %v", host, c)
		}
		if a := w.Header().Get(DefaultAssertionHeader); (host == "robot.test") != (a != "") {
			t.Errorf("%s: assertion %q", host, a)
		}
	}
	srv.SetExchangeRefusal("access_denied")
	if w := verdict("orders.test"); w.Code != 200 {
		t.Errorf("a cached exchange: %d", w.Code)
	}
	alice = userToken(srv, "alice", "") // another token: exchanged anew
	if w := verdict("orders.test"); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "access_denied") {
		t.Errorf("refused exchange: %d %s", w.Code, w.Body)
	}
}
