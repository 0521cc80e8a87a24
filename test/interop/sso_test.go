package interop_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Single sign-on across subdomains, in a real browser: one idp-proxy on
// https in front of two apps chosen by host (a.example.com and
// b.example.com, both mapped to 127.0.0.1 by Chromium's
// --host-resolver-rules, so that nothing leaves loopback), with the
// session cookie shared by the domain example.com and the callback on the
// central host login.example.com. Signed in on a.example.com, the browser
// opens b.example.com without a second sign-in; a logout on b.example.com
// ends the session on a.example.com too.
func TestSingleSignOnBrowser(t *testing.T) {
	requireTools(t, needProvider|needBrowser)
	hp, px := startSSOProxy(t, "example.com", "login")
	a, b := "https://a.example.com"+hp, "https://b.example.com"+hp
	obs := runBrowserWith(t, []string{"--host-resolver-rules=MAP *.example.com 127.0.0.1", "--ignore-certificate-errors"}, []browserStep{
		{Do: "goto", URL: a + "/app/page?x=1"},                    // 0: to the provider, through the central login
		{Do: "login", Username: "alice", Password: alicePassword}, // 1: back on a.example.com
		{Do: "goto", URL: b + "/app/page?x=2"},                    // 2: b.example.com, no second sign-in
		{Do: "goto", URL: b + "/auth/logout"},                     // 3: logout on b.example.com
		{Do: "goto", URL: a + "/public/after"},                    // 4: a.example.com: signed out
		{Do: "goto", URL: a + "/app/page?x=3"},                    // 5: and sent to the sign-in again
	})
	if !obs[0].LoginForm || !strings.Contains(obs[0].Docs.chain(), "login.example.com"+hp+"/auth/login") {
		t.Errorf("a.example.com without a session did not go through the central login to the provider: at %s%s", obs[0].URL, obs[0].docChain())
	}
	if o := obs[1]; o.URL != a+"/app/page?x=1" || o.Echo == nil || o.Echo.Replica != "a" || o.Echo.Username != "alice" {
		t.Fatalf("after the sign-in: at %s, echo %+v%s", o.URL, o.Echo, o.docChain())
	}
	var shared bool
	for _, c := range obs[1].Cookies {
		if c.Name == "__Secure-idp_session" && c.Domain == ".example.com" && c.Secure && c.HTTPOnly && c.Path == "/" {
			shared = true
		}
	}
	if !shared {
		t.Errorf("no __Secure-idp_session cookie for .example.com (Secure, HttpOnly, Path=/): %+v", obs[1].Cookies)
	}
	if o := obs[2]; o.URL != b+"/app/page?x=2" || o.Echo == nil || o.Echo.Replica != "b" || o.Echo.Username != "alice" || o.LoginForm ||
		strings.Contains(o.Docs.chain(), "/auth/login") || o.Echo.SessionCookie {
		t.Errorf("b.example.com after signing in on a.example.com: at %s, echo %+v%s", o.URL, o.Echo, o.docChain())
	}
	if o := obs[4]; o.Echo == nil || o.Echo.Replica != "a" || o.Echo.Username != "" {
		t.Errorf("a.example.com after the logout on b.example.com: at %s, echo %+v (still signed in?)%s", o.URL, o.Echo, o.docChain())
	}
	for _, c := range obs[4].Cookies {
		if strings.Contains(c.Name, "idp_session") {
			t.Errorf("the session cookie survived the logout: %+v", c)
		}
	}
	if o := obs[5]; o.Echo != nil && o.Echo.Username == "alice" && !strings.Contains(o.Docs.chain(), "/auth/login") {
		t.Errorf("a protected page on a.example.com after the logout was served without a sign-in%s", o.docChain())
	}
	checkNoTokens(t, px)
}

// startSSOProxy runs idp-proxy on https in front of two echo apps chosen
// by host, a.DOMAIN and b.DOMAIN, with the callback on CALLBACK.DOMAIN,
// the session cookie for DOMAIN and the allowlist *.DOMAIN, next to a
// fresh provider. It returns ":port" (every host's) and the process.
func startSSOProxy(t *testing.T, domain, callback string) (hp string, px *proc) {
	t.Helper()
	port := freePort(t)
	hp = ":" + strconv.Itoa(port)
	login := "https://" + callback + "." + domain + hp
	p := startProvider(t, providerOptions{RedirectURIs: []string{login + "/auth/callback", unusedRedirect}})
	appA, appB := startEchoUpstream(t, "a"), startEchoUpstream(t, "b")
	cert, key := selfSignedCert(t, "*."+domain)
	opsAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cfg := fmt.Sprintf(`listen: 127.0.0.1%[1]s
metrics_listen: %[2]s
tls: {cert_file: %[3]s, key_file: %[4]s}
upstreams:
  - match: a.%[11]s/
    url: %[5]s
  - match: b.%[11]s/
    url: %[6]s
idp:
%[7]s  client_id: %[8]s
  client_secret: %[9]s
  include_routes: true
  redirect_uri: %[10]s/auth/callback
  session_secret: interop-session-secret-0123456789abcdef
  allowed_redirect_hosts: ["*.%[11]s%[1]s"]
  http_timeout: 5s
routes:
  - match: GET /public/
    public: true
  - match: GET /app/
    roles: [creator]
default_policy: deny
session:
  enabled: true
  cookie_domain: %[11]s
server:
  drain_delay: 0s
log:
  format: json
  level: debug
`, hp, opsAddr, cert, key, appA.URL, appB.URL, realmYAML(p.ServerURL()), clientID, clientSecret, login, domain)
	return hp, startProxyYAML(t, "idp-proxy-sso", cfg, opsAddr)
}

// TestSignInStartedOnAppHostBrowser: a sign-in started at the login route
// of an app's host (a.example.test/auth/login, as an app's own "Sign in"
// link does), with the callback on the central host auth.example.test,
// completes in a real browser: with a relative return_to the browser ends
// on a.example.test's page, never on the callback host; with an absolute
// one, on the other app's page.
func TestSignInStartedOnAppHostBrowser(t *testing.T) {
	requireTools(t, needProvider|needBrowser)
	hp, px := startSSOProxy(t, "example.test", "auth")
	a, b := "https://a.example.test"+hp, "https://b.example.test"+hp
	for _, c := range []struct{ returnTo, want, replica string }{
		{"/app/landing?x=1", a + "/app/landing?x=1", "a"},
		{b + "/app/page?x=2", b + "/app/page?x=2", "b"},
	} {
		// A fresh browser each: no provider session from the last one.
		obs := runBrowserWith(t, []string{"--host-resolver-rules=MAP *.example.test 127.0.0.1", "--ignore-certificate-errors"}, []browserStep{
			{Do: "goto", URL: a + "/auth/login?return_to=" + url.QueryEscape(c.returnTo)},
			{Do: "login", Username: "alice", Password: alicePassword},
		})
		if !obs[0].LoginForm {
			t.Errorf("return_to %s: the login on a.example.test did not reach the provider's form: at %s%s", c.returnTo, obs[0].URL, obs[0].docChain())
			continue
		}
		if o := obs[1]; o.URL != c.want || o.Echo == nil || o.Echo.Replica != c.replica || o.Echo.Username != "alice" {
			t.Errorf("return_to %s: after the sign-in: at %s (status %d), echo %+v, want %s served to alice%s", c.returnTo, o.URL, o.Status, o.Echo, c.want, o.docChain())
		}
	}
	checkNoTokens(t, px)
}

// selfSignedCert writes a certificate and key for the DNS name (an
// ECDSA P-256 self-signed certificate, valid one hour) and returns their
// paths.
func selfSignedCert(t *testing.T, names ...string) (certFile, keyFile string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     names,
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
