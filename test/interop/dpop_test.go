package interop_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp/dpop"
)

// The provider's client whose tokens are always DPoP-bound (provider/README.md).
const (
	dpopClientID = "svc-dpop"
	dpopSecret   = "svc-dpop-secret"
)

// newDPoPKey is a client's ES256 proof key and its RFC 7638 thumbprint.
func newDPoPKey(t *testing.T) (*ecdsa.PrivateKey, string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jkt, err := dpop.ThumbprintOfKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return k, jkt
}

// proofFor is a fresh proof by key for one request.
func proofFor(t *testing.T, key crypto.Signer, method, url, token, nonce string) string {
	t.Helper()
	p, err := dpop.NewProof(key, dpop.ProofParams{Method: method, URL: url, AccessToken: token, Nonce: nonce})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// dpopServiceToken asks the provider for a client_credentials token bound
// to key (RFC 9449 §5), answering its use_dpop_nonce (§8) once.
func dpopServiceToken(t *testing.T, p *provider, key crypto.Signer) (token, tokenType string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: providerTransport()}
	nonce := ""
	for attempt := 0; attempt < 2; attempt++ {
		req, err := http.NewRequest("POST", p.TokenURL(), strings.NewReader(url.Values{"grant_type": {"client_credentials"}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(dpopClientID, dpopSecret)
		req.Header.Set("DPoP", proofFor(t, key, "POST", p.TokenURL(), "", nonce))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("client_credentials with DPoP: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var doc struct {
			AccessToken string `json:"access_token"`
			TokenType   string `json:"token_type"`
			Error       string `json:"error"`
		}
		_ = json.Unmarshal(body, &doc)
		if resp.StatusCode == http.StatusBadRequest && doc.Error == "use_dpop_nonce" && nonce == "" {
			if nonce = resp.Header.Get("DPoP-Nonce"); nonce == "" {
				t.Fatalf("use_dpop_nonce without a DPoP-Nonce header: %s", body)
			}
			continue
		}
		if resp.StatusCode != http.StatusOK || doc.AccessToken == "" {
			t.Fatalf("client_credentials with DPoP: %s: %s", resp.Status, body)
		}
		return doc.AccessToken, doc.TokenType
	}
	t.Fatal("client_credentials with DPoP: the provider asked for a nonce twice")
	return "", ""
}

// callProof sends one POST with the Authorization scheme and token, and the
// DPoP proof when not empty.
func callProof(t *testing.T, target, scheme, token, proof string, body any) answer {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest("POST", target, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", scheme+" "+token)
	}
	if proof != "" {
		req.Header.Set("DPoP", proof)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", target, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return answer{Status: resp.StatusCode, Header: resp.Header, Body: out}
}

// dpopRefused checks a 401 with the DPoP challenge only (a required route
// offers no Bearer challenge, RFC 9449 §7.1) and a problem+json body.
func dpopRefused(t *testing.T, a answer, wantError string) {
	t.Helper()
	if a.Status != http.StatusUnauthorized {
		t.Fatalf("want 401, got %s", a)
	}
	chs := a.Header.Values("WWW-Authenticate")
	joined := strings.Join(chs, ", ")
	if len(chs) == 0 || !strings.HasPrefix(chs[0], "DPoP ") || !strings.Contains(joined, `algs="`) || strings.Contains(joined, "Bearer") {
		t.Errorf("WWW-Authenticate %q: want the DPoP challenge alone, with algs", chs)
	}
	if wantError != "" && !strings.Contains(joined, `error="`+wantError+`"`) {
		t.Errorf("WWW-Authenticate %q lacks error=%q", chs, wantError)
	}
	if ct := a.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
}

// The certified provider (oidc-provider, features.dPoP) binds a
// client_credentials token to the key of the proof sent with the token
// request (RFC 9449 §5, after its use_dpop_nonce, §8): cnf.jkt is the key's
// thumbprint (§6.1), typ "DPoP" as Keycloak marks it, token_type DPoP
// (§5). The real idp-proxy then admits it on a `dpop: required` route with
// a fresh proof by that key only (§7.1): not without a proof, not with a
// proof by another key (§4.3 step 12), not under the Bearer scheme, not
// with a proof used before (§11.1).
func TestInteropDPoPBoundServiceToken_RFC9449_5_7(t *testing.T) {
	t.Parallel()
	requireTools(t, needProvider)
	p := startProvider(t, providerOptions{})
	key, jkt := newDPoPKey(t)
	tok, typ := dpopServiceToken(t, p, key)
	if !strings.EqualFold(typ, "DPoP") {
		t.Errorf("token_type %q, want DPoP (RFC 9449 §5)", typ)
	}
	c := claims(t, tok)
	cnf, _ := c["cnf"].(map[string]any)
	if cnf["jkt"] != jkt || c["typ"] != "DPoP" {
		t.Fatalf("the provider's token: cnf %v typ %v, want cnf.jkt %s typ DPoP", c["cnf"], c["typ"], jkt)
	}

	proxyAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	opsAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	upstream, _ := startShortener(t, "--trust-identity-headers", "--base-url", "http://"+proxyAddr)
	yaml := proxyYAMLHead(proxyAddr, opsAddr, upstream, realmYAML(p.ServerURL()), "http://"+proxyAddr,
		"  optional_audiences: ["+dpopClientID+"]\n") + `routes:
  - match: POST /shorten
    roles: [creator]
    dpop: required
default_policy: deny
log:
  format: json
`
	startProxyYAML(t, "idp-proxy", yaml, opsAddr)

	target := "http://" + proxyAddr + "/shorten"
	link := map[string]string{"url": "https://example.com/dpop-interop"}
	used := proofFor(t, key, "POST", target, tok, "")
	t.Run("a fresh proof by the token's key passes", func(t *testing.T) {
		created(t, callProof(t, target, "DPoP", tok, used, link))
		created(t, callProof(t, target, "DPoP", tok, proofFor(t, key, "POST", target, tok, ""), link))
	})
	t.Run("no proof: 401 with the DPoP challenge", func(t *testing.T) {
		dpopRefused(t, callProof(t, target, "DPoP", tok, "", link), "invalid_dpop_proof")
	})
	t.Run("a proof by another key: 401, RFC 9449 §4.3 step 12", func(t *testing.T) {
		other, _ := newDPoPKey(t)
		dpopRefused(t, callProof(t, target, "DPoP", tok, proofFor(t, other, "POST", target, tok, ""), link), "")
	})
	t.Run("the Bearer scheme: 401", func(t *testing.T) {
		dpopRefused(t, callProof(t, target, "Bearer", tok, proofFor(t, key, "POST", target, tok, ""), link), "")
	})
	t.Run("a proof used before: 401, RFC 9449 §11.1", func(t *testing.T) {
		dpopRefused(t, callProof(t, target, "DPoP", tok, used, link), "invalid_dpop_proof")
	})
}

// writeDPoPKeyPEM writes key as a PKCS #8 PEM file (what
// `idp-proxy dpop-proof --new-key` writes) and returns its path.
func writeDPoPKeyPEM(t *testing.T, key *ecdsa.PrivateKey) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "session-dpop.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The browser sign-in against the certified provider (which advertises
// dpop_signing_alg_values_supported and requires DPoP nonces) with
// session.dpop_key_file: the proxy's code exchange carries a proof by its
// key and answers use_dpop_nonce (RFC 9449 §5, §8), so the session's
// access token is bound to the proxy's key (cnf.jkt, typ DPoP, §6.1); the
// proxy admits the session on its own binding, with no proof from the
// browser. (The refresh's binding is tested with idptest, whose clock the
// test moves: TestSessionDPoPBoundToPluginKey_RFC9449_5_8 in pkg/idp.)
func TestInteropSessionDPoPBound_RFC9449_5_8(t *testing.T) {
	t.Parallel()
	requireTools(t, needProvider)
	key, jkt := newDPoPKey(t)
	keyFile := writeDPoPKeyPEM(t, key)
	proxyPort := freePort(t)
	public := "http://127.0.0.1:" + strconv.Itoa(proxyPort)
	p := startProvider(t, providerOptions{RedirectURIs: []string{public + "/auth/callback"}, AccessTokenTTL: 120})

	type seen struct{ auth, jkt string }
	got := make(chan seen, 8)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/app/" {
			return // the proxy's readiness probe
		}
		got <- seen{r.Header.Get("Authorization"), r.Header.Get("X-Auth-Request-Dpop-Jkt")}
		_, _ = io.WriteString(w, "app")
	}))
	t.Cleanup(app.Close)
	opsAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	startProxyYAML(t, "idp-proxy", proxyYAMLHead("127.0.0.1:"+strconv.Itoa(proxyPort), opsAddr, app.URL, realmYAML(p.ServerURL()), public, "")+`routes:
  - match: GET /app/
    roles: [creator]
default_policy: deny
session:
  enabled: true
  max_age: 1h
  dpop_key_file: `+keyFile+`
server:
  drain_delay: 0s
log:
  format: json
`, opsAddr)

	c := browserlessClient(t, "")
	get := func() *http.Response {
		t.Helper()
		req, err := http.NewRequest("GET", public+"/app/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "text/html")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET /app/: %v", err)
		}
		return resp
	}
	resp := submitLogin(t, c, get(), "alice", "alice-password")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "app" {
		t.Fatalf("sign-in through the proxy: %s at %s: %s", resp.Status, resp.Request.URL, body)
	}
	check := func(what string) {
		t.Helper()
		s := <-got
		tok, ok := strings.CutPrefix(s.auth, "DPoP ")
		if !ok || s.jkt != jkt {
			t.Fatalf("%s: the app got Authorization %.12q..., X-Auth-Request-Dpop-Jkt %q; want a DPoP token of the proxy's key %s", what, s.auth, s.jkt, jkt)
		}
		c := claims(t, tok)
		cnf, _ := c["cnf"].(map[string]any)
		if cnf["jkt"] != jkt || c["typ"] != "DPoP" {
			t.Fatalf("%s: the session's token has cnf %v typ %v, want cnf.jkt %s typ DPoP", what, c["cnf"], c["typ"], jkt)
		}
	}
	check("sign-in")
	resp = get()
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("with the session: %s", resp.Status)
	}
	check("the next request")
}
