package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// verify shows the identity as idp.claims reads it, and --request judges
// the rules' roles on the mapped roles.
func TestVerifyWithClaimMapping(t *testing.T) {
	idpSrv := idptest.NewServer(t)
	y := fmt.Sprintf(`
listen: 127.0.0.1:0
metrics_listen: 127.0.0.1:0
upstream: {url: "http://127.0.0.1:8000"}
idp:
  server_url: %q
  realm: %s
  client_id: shortener
  claims: {preset: generic, username: oid, groups: "keys(urn:zitadel:iam:org:project:roles)"}
routes:
  - {match: POST /shorten, roles: [creator]}
log: {level: warn}
`, idpSrv.URL, idpSrv.Realm)
	cfg := filepath.Join(t.TempDir(), "proxy.yaml")
	if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := idpSrv.Mint(map[string]any{"aud": "shortener", "typ": nil, "sub": "s-1", "oid": "oid-1",
		"roles": []any{"creator"}, "scp": []any{"User.Read"}, "realm_access": map[string]any{"roles": []any{"ignored"}},
		"urn:zitadel:iam:org:project:roles": map[string]any{"team-a": map[string]any{}}})
	out, _, err := run(t, deps{}, "-c", cfg, "verify", "--request", "POST /shorten", tok)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var v struct {
		Decision string
		User     struct {
			PreferredUsername string   `json:"preferred_username"`
			RealmRoles        []string `json:"realm_roles"`
			Groups            []string `json:"groups"`
			Scopes            []string `json:"scopes"`
		}
		Request struct{ Status int }
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if v.Decision != "valid" || v.User.PreferredUsername != "oid-1" || !reflect.DeepEqual(v.User.RealmRoles, []string{"creator"}) ||
		!reflect.DeepEqual(v.User.Groups, []string{"team-a"}) || !reflect.DeepEqual(v.User.Scopes, []string{"User.Read"}) || v.Request.Status != 0 {
		t.Errorf("verdict %+v\n%s", v, out)
	}
}

// verify --request names the clause of a claims rule that refuses, and
// never the claim's value.
func TestVerifyRequestNamesTheClause(t *testing.T) {
	idpSrv := idptest.NewServer(t)
	y := fmt.Sprintf(`
listen: 127.0.0.1:0
metrics_listen: 127.0.0.1:0
upstream: {url: "http://127.0.0.1:8000"}
idp:
  server_url: %q
  realm: %s
  client_id: shortener
routes:
  - match: /tenant/
    claims: {tid: [t1]}
  - match: /staff/
    email_domains: [corp.example.com]
log: {level: warn}
`, idpSrv.URL, idpSrv.Realm)
	cfg := filepath.Join(t.TempDir(), "proxy.yaml")
	if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	claims := idpSrv.UserClaims("shortener", "alice")
	claims["tid"] = "tenant-secret"
	tok := idpSrv.Mint(claims)
	for _, tc := range []struct{ req, clause string }{{"GET /tenant/x", "claims:tid"}, {"GET /staff/x", "email_domains"}} {
		out, _, err := run(t, deps{}, "-c", cfg, "verify", "--request", tc.req, tok)
		var v struct {
			Request struct {
				Status int
				Clause string
			}
		}
		if jerr := json.Unmarshal([]byte(out), &v); jerr != nil {
			t.Fatalf("%v: %s", jerr, out)
		}
		if err == nil || v.Request.Status != 403 || v.Request.Clause != tc.clause || !strings.Contains(err.Error(), "clause "+tc.clause) {
			t.Errorf("%s: %v, request %+v; want 403 naming %s", tc.req, err, v.Request, tc.clause)
		}
		if n := strings.Count(out, "tenant-secret"); n != 1 { // once: in the claims the verdict shows
			t.Errorf("%s: the claim's value appears %d times:\n%s", tc.req, n, out)
		}
	}
}
