package cli

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// A provider that is not a Keycloak realm, named by idp.issuer_url: its
// endpoints sit at paths only its discovery document gives.

// writeIssuerConfig is writeConfig with the provider named by
// idp.issuer_url (idpSrv's issuer) and the /auth routes on.
func writeIssuerConfig(t *testing.T, idpSrv *idptest.Server, upstream string) string {
	t.Helper()
	p := writeConfig(t, idpSrv, upstream, "")
	shorthand := fmt.Sprintf("  server_url: %q\n  realm: %s\n", idpSrv.URL, idpSrv.Realm)
	y := mustRead(t, p)
	if !strings.Contains(y, shorthand) {
		t.Fatalf("writeConfig's idp section changed:\n%s", y)
	}
	y = strings.Replace(y, shorthand, fmt.Sprintf(`  issuer_url: %q
  client_secret: shortener-secret
  include_routes: true
  redirect_uri: http://127.0.0.1:4180/auth/callback
  session_secret: a session secret of at least 32 bytes
`, idpSrv.Issuer), 1)
	if err := os.WriteFile(p, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestServePlainIssuer(t *testing.T) {
	idpSrv := idptest.NewServer(t, idptest.Options{PlainIssuer: true, Clients: []idptest.Client{svc, {ID: "shortener", Secret: "shortener-secret"}}})
	cfg := writeIssuerConfig(t, idpSrv, newUpstream(t))

	out, _, err := run(t, deps{}, "check-config", cfg)
	if err != nil || !strings.Contains(out, "issuer:   "+idpSrv.Issuer+"\n") {
		t.Fatalf("check-config: %v\n%s", err, out)
	}
	s := startServeSignals(t, cfg)
	creator := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))
	if code := status(t, "POST", s.proxy+"/shorten", creator); code != http.StatusOK {
		t.Errorf("bearer token of the plain issuer: %d", code)
	}
	req, _ := http.NewRequest("POST", s.proxy+"/shorten", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := resp.Header.Get("WWW-Authenticate"), `Bearer realm="`+idpSrv.Issuer+`"`; resp.StatusCode != 401 || got != want {
		t.Errorf("no token: %d %q, want 401 %q", resp.StatusCode, got, want)
	}
	// The login redirect goes to the discovered authorization endpoint.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noRedirect.Get(s.proxy + "/auth/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || loc == nil || loc.Scheme+"://"+loc.Host+loc.Path != idpSrv.AuthURL() {
		t.Errorf("login: %d to %q, want %s", resp.StatusCode, resp.Header.Get("Location"), idpSrv.AuthURL())
	}

	// token: client_credentials at the discovered token endpoint; verify
	// accepts the result.
	env := []string{"IDP_PROXY_IDP_CLIENT_ID=" + svc.ID, "IDP_PROXY_IDP_CLIENT_SECRET=" + svc.Secret}
	before := idpSrv.TokenRequests()
	out, _, err = run(t, deps{environ: env}, "-c", cfg, "token")
	if err != nil || idpSrv.TokenRequests() != before+1 {
		t.Fatalf("token: %v (%d token requests)", err, idpSrv.TokenRequests()-before)
	}
	if out, _, err := run(t, deps{}, "-c", cfg, "verify", strings.TrimSpace(out)); err != nil || !strings.Contains(out, `"decision": "valid"`) {
		t.Errorf("verify of the service token: %v %s", err, out)
	}
}

// Discovery naming another issuer: the provider is refused as if it were
// down (logged, not ready, 503), and verify says why.
func TestServeRefusesDiscoveryOfAnotherIssuer(t *testing.T) {
	idpSrv := idptest.NewServer(t, idptest.Options{PlainIssuer: true, Discovery: func(doc map[string]any) {
		doc["issuer"] = "https://elsewhere.example"
	}})
	cfg := writeIssuerConfig(t, idpSrv, newUpstream(t))
	tok := idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator"))

	out, _, err := run(t, deps{}, "-c", cfg, "verify", tok)
	if err == nil || !strings.Contains(out, `"decision": "unavailable"`) || !strings.Contains(out, `elsewhere.example`) {
		t.Errorf("verify: %v\n%s", err, out)
	}

	s := startServeUnready(t, cfg)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.logs.String(), "elsewhere.example") {
		if time.Now().After(deadline) {
			t.Fatalf("the refusal was not logged:\n%s", s.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := status(t, "GET", s.ops+"/readyz", ""); code != http.StatusServiceUnavailable {
		t.Errorf("readyz: %d, want 503", code)
	}
	if code := status(t, "POST", s.proxy+"/shorten", tok); code != http.StatusServiceUnavailable {
		t.Errorf("protected route: %d, want 503", code)
	}
}

// newUpstream serves 200 "ok" for every request until the test ends.
func newUpstream(t *testing.T) string {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(up.Close)
	return up.URL
}
