package cli

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
	"github.com/idp-proxy/idp-proxy/pkg/shortener/memstore"
)

func serve(h http.Handler, method, target, body string, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestLinksBehindProxy: with trusted identity headers the /links API sees
// the proxy's user and roles; --admin-roles lets an administrator delete
// anyone's link.
func TestLinksBehindProxy(t *testing.T) {
	cfg := config{BaseURL: "https://sho.rt", MetricsListen: "off", TrustIdentity: true, IdentityHeader: "X-Auth-Request-User",
		RolesHeader: "X-Auth-Request-Roles", AdminRoles: []string{"shortener-admin"}, CustomCodes: true, Page: true}
	h, _, err := newHandlers(cfg, memstore.New(), nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	alice := map[string]string{"X-Auth-Request-User": "alice"}
	if rec := serve(h, "POST", "/links", `{"url":"https://example.com/","short_code":"alices"}`, alice); rec.Code != 201 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	if rec := serve(h, "GET", "/links", "", nil); rec.Code != 401 {
		t.Fatalf("no identity: %d", rec.Code)
	}
	if rec := serve(h, "GET", "/links", "", alice); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"short_code":"alices"`) {
		t.Fatalf("list: %d %s", rec.Code, rec.Body)
	}
	bob := map[string]string{"X-Auth-Request-User": "bob", "X-Auth-Request-Roles": "creator"}
	if rec := serve(h, "DELETE", "/links/alices", "", bob); rec.Code != 404 {
		t.Fatalf("bob's delete: %d", rec.Code)
	}
	admin := map[string]string{"X-Auth-Request-User": "carol", "X-Auth-Request-Roles": "creator,shortener-admin"}
	if rec := serve(h, "DELETE", "/links/alices", "", admin); rec.Code != 204 {
		t.Fatalf("admin's delete: %d", rec.Code)
	}
	if rec := serve(h, "GET", "/", "", nil); rec.Code != 200 || !strings.Contains(rec.Body.String(), "/auth/login?return_to=/") {
		t.Fatalf("page: %d", rec.Code)
	}
}

// TestLinksInProcess: in-process, creating needs the create role, the
// other /links routes any valid token, in the header or (cookie mode) the
// cookie.
func TestLinksInProcess(t *testing.T) {
	srv := idptest.NewServer(t)
	p, err := idp.New(t.Context(), idp.Config{ServerURL: srv.URL, Realm: srv.Realm, ClientID: "shortener",
		TokenLocation: tokenLocation("cookie")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if err := p.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	cfg := config{BaseURL: "http://sho.rt", MetricsListen: "off", IDPServerURL: srv.URL, IDPCreateRoles: []string{"creator"}, Page: true}
	h, _, err := newHandlers(cfg, memstore.New(), p, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	cookie := func(tok string) map[string]string { return map[string]string{"Cookie": "access_token=" + tok} }
	alice := cookie(srv.Mint(srv.UserClaims("shortener", "alice", "creator")))
	bob := cookie(srv.Mint(srv.UserClaims("shortener", "bob")))
	if rec := serve(h, "POST", "/links", `{"url":"https://example.com/"}`, bob); rec.Code != 403 {
		t.Fatalf("bob creates: %d", rec.Code)
	}
	if rec := serve(h, "POST", "/links", `{"url":"https://example.com/"}`, alice); rec.Code != 201 {
		t.Fatalf("alice creates: %d %s", rec.Code, rec.Body)
	}
	if rec := serve(h, "GET", "/links", "", bob); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"links":[]`) {
		t.Fatalf("bob lists: %d %s", rec.Code, rec.Body)
	}
	if rec := serve(h, "GET", "/links", "", alice); rec.Code != 200 || strings.Contains(rec.Body.String(), `"links":[]`) {
		t.Fatalf("alice lists: %d %s", rec.Code, rec.Body)
	}
	if rec := serve(h, "GET", "/links", "", nil); rec.Code != 401 {
		t.Fatalf("no token: %d", rec.Code)
	}
	if rec := serve(h, "GET", "/", "", nil); rec.Code != 200 {
		t.Fatalf("page without token: %d", rec.Code)
	}
}
