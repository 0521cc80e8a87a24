package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// verify checks tokens and never uses a secret: a configuration with
// browser sessions whose session secret and client secret file are not
// there (they come at deploy time) verifies a token, with and without
// --request, and --no-secrets is accepted as check-config takes it.
func TestVerifyNeedsNoSecrets(t *testing.T) {
	idpSrv := idptest.NewServer(t)
	cfg := writeConfig(t, idpSrv, "http://127.0.0.1:8000", "")
	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	withSessions := strings.Replace(string(raw), "  optional_audiences: [svc-reporter]\n",
		"  optional_audiences: [svc-reporter]\n  include_routes: true\n  redirect_uri: https://app.example.com/auth/callback\n  client_secret_file: /nonexistent/client-secret\n", 1)
	if err := os.WriteFile(cfg, []byte(withSessions), 0o600); err != nil {
		t.Fatal(err)
	}
	good := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	for _, args := range [][]string{
		{"verify", good},
		{"verify", "--request", "POST /shorten", good},
		{"verify", "--no-secrets", good},
	} {
		out, _, err := run(t, deps{}, append([]string{"-c", cfg}, args...)...)
		if err != nil || !strings.Contains(out, `"decision": "valid"`) {
			t.Errorf("%q: %v\n%s", args[:len(args)-1], err, out)
		}
	}
}

// token authenticates as the client and keeps no session: it reads the
// client secret and never asks for the session secret.
func TestTokenNeedsNoSessionSecret(t *testing.T) {
	idpSrv := idptest.NewServer(t, idptest.Options{Clients: []idptest.Client{svc}})
	cfg := writeConfig(t, idpSrv, "http://127.0.0.1:8000", "")
	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	withSessions := strings.Replace(string(raw), "  optional_audiences: [svc-reporter]\n",
		"  optional_audiences: [svc-reporter]\n  include_routes: true\n  redirect_uri: https://app.example.com/auth/callback\n", 1)
	if err := os.WriteFile(cfg, []byte(withSessions), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"IDP_PROXY_IDP_CLIENT_ID=" + svc.ID, "IDP_PROXY_IDP_CLIENT_SECRET=" + svc.Secret}
	out, _, err := run(t, deps{environ: env}, "-c", cfg, "token")
	if err != nil || strings.Count(strings.TrimSpace(out), ".") != 2 {
		t.Errorf("token without a session secret: %v %q", err, out)
	}
}
