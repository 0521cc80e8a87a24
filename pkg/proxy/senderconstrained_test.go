package proxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A sender-constrained token is refused 401 with its reason by the proxy,
// in forward-auth verdicts and by Decide, and never reaches the upstream:
// accepting a DPoP-bound token under Bearer is the downgrade of RFC 9449
// §7.2, a certificate-bound one without the certificate ignores RFC 8705
// §3. Keycloak's DPoP-bound tokens (typ "DPoP") are refused for that
// reason, not as "not an access token".
func TestSenderConstrainedTokensRefused(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	cfg := testConfig(idpSrv, up.URL)
	cfg.ForwardAuth = ForwardAuthConfig{Enabled: true, TrustedCIDRs: []string{"10.1.0.0/16"}}
	p, px := startProxy(t, cfg, Options{}, true)
	const thumb = "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"
	mint := func(extra map[string]any) string {
		c := idpSrv.UserClaims("shortener", "alice", "creator")
		for k, v := range extra {
			c[k] = v
		}
		return idpSrv.Mint(c)
	}
	for _, tc := range []struct{ name, token, binding string }{
		{"RFC 9449 §7.2: cnf.jkt under Bearer", mint(map[string]any{"cnf": map[string]any{"jkt": thumb}}), "DPoP"},
		{"RFC 9449 §7.2: Keycloak typ DPoP", mint(map[string]any{"typ": "DPoP", "cnf": map[string]any{"jkt": thumb}}), "DPoP"},
		{"RFC 8705 §3: cnf x5t#S256 without a certificate", mint(map[string]any{"cnf": map[string]any{"x5t#S256": thumb}}), "client certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, "GET", px.URL+"/abc1234", tc.token, nil, "") // a public route forwards no bound identity
			if resp.StatusCode != http.StatusOK || up.last(t).Header.Get("X-Auth-Request-User") != "" {
				t.Fatalf("public route: %d %s, user %q", resp.StatusCode, body, up.last(t).Header.Get("X-Auth-Request-User"))
			}
			before := up.count()
			resp, body = do(t, "POST", px.URL+"/shorten", tc.token, nil, `{"url":"https://example.com/"}`)
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) ||
				!strings.Contains(body, "sender-constrained token ("+tc.binding) || !strings.Contains(body, "proof of possession is not supported") {
				t.Fatalf("%d %q %s, want 401 naming the binding", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
			}
			if up.count() != before {
				t.Fatal("a sender-constrained token reached the upstream")
			}
			w := httptest.NewRecorder()
			p.ServeHTTP(w, verifyReq("/auth/verify", "10.1.2.3:1", map[string]string{
				"X-Original-URI": "/shorten", "X-Original-Method": "POST", "Authorization": "Bearer " + tc.token}))
			if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "proof of possession") || w.Header().Get("X-Auth-Request-User") != "" {
				t.Fatalf("forward-auth verdict %d %s", w.Code, w.Body)
			}
			if d, err := p.Decide(t.Context(), "POST", "/shorten", tc.token); err != nil || d.Status != http.StatusUnauthorized || d.Decision != "invalid_token" {
				t.Fatalf("Decide = %+v, %v", d, err)
			}
		})
	}
}
