package interop_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The provider's client whose tokens are certificate-bound (provider/README.md).
const (
	mtlsClientID = "svc-mtls"
	mtlsSecret   = "svc-mtls-secret"
)

// clientCertPEM is a self-signed client certificate and its RFC 8705
// §3.1 thumbprint (base64url SHA-256 of the DER).
func clientCertPEM(t *testing.T, cn string) (pemText, x5t string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(der)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), base64.RawURLEncoding.EncodeToString(sum[:])
}

// certBoundServiceToken asks the provider for a client_credentials token
// of svc-mtls, presenting certPEM as a TLS-terminating ingress passes it.
func certBoundServiceToken(t *testing.T, p *provider, certPEM string) string {
	t.Helper()
	req, err := http.NewRequest("POST", p.TokenURL(), strings.NewReader(url.Values{"grant_type": {"client_credentials"}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(mtlsClientID, mtlsSecret)
	req.Header.Set("ssl-client-cert", url.QueryEscape(certPEM))
	resp, err := (&http.Client{Timeout: 10 * time.Second, Transport: providerTransport()}).Do(req)
	if err != nil {
		t.Fatalf("client_credentials with a certificate: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var doc struct {
		AccessToken string `json:"access_token"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &doc) != nil || doc.AccessToken == "" {
		t.Fatalf("client_credentials with a certificate: %s: %s", resp.Status, body)
	}
	return doc.AccessToken
}

// The certified provider (oidc-provider, features.mTLS with
// certificateBoundAccessTokens) binds a client_credentials token to the
// client's certificate (RFC 8705 §3: cnf["x5t#S256"]). The real
// idp-proxy, given the certificate by its ingress (client_cert: nginx's
// URL-encoded PEM from a trusted peer), admits the token under Bearer
// with that certificate only (§3): not without a certificate, not with
// another one, not under the DPoP scheme.
func TestInteropCertificateBoundServiceToken_RFC8705_3(t *testing.T) {
	t.Parallel()
	requireTools(t, needProvider)
	p := startProvider(t, providerOptions{})
	cert, x5t := clientCertPEM(t, "svc-mtls")
	tok := certBoundServiceToken(t, p, cert)
	c := claims(t, tok)
	cnf, _ := c["cnf"].(map[string]any)
	if cnf["x5t#S256"] != x5t {
		t.Fatalf("the provider's token: cnf %v, want x5t#S256 %s", c["cnf"], x5t)
	}

	proxyAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	opsAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	upstream, _ := startShortener(t, "--trust-identity-headers", "--base-url", "http://"+proxyAddr)
	yaml := proxyYAMLHead(proxyAddr, opsAddr, upstream, realmYAML(p.ServerURL()), "http://"+proxyAddr,
		"  optional_audiences: ["+mtlsClientID+"]\n") + `routes:
  - match: POST /shorten
    roles: [creator]
default_policy: deny
client_cert:
  header: ssl-client-cert
  format: pem
  trusted_cidrs: [127.0.0.1/32]
log:
  format: json
`
	startProxyYAML(t, "idp-proxy", yaml, opsAddr)

	target := "http://" + proxyAddr + "/shorten"
	link := map[string]string{"url": "https://example.com/mtls-interop"}
	send := func(scheme, certPEM string) answer {
		t.Helper()
		b, _ := json.Marshal(link)
		req, err := http.NewRequest("POST", target, strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", scheme+" "+tok)
		if certPEM != "" {
			req.Header.Set("ssl-client-cert", url.QueryEscape(certPEM))
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", target, err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return answer{Status: resp.StatusCode, Header: resp.Header, Body: out}
	}
	t.Run("with its certificate", func(t *testing.T) {
		created(t, send("Bearer", cert))
	})
	other, _ := clientCertPEM(t, "svc-mtls")
	for name, a := range map[string]func() answer{
		"without a certificate": func() answer { return send("Bearer", "") },
		"with another one":      func() answer { return send("Bearer", other) },
		"under the DPoP scheme": func() answer { return send("DPoP", cert) },
	} {
		t.Run(name, func(t *testing.T) {
			if got := a(); got.Status != http.StatusUnauthorized {
				t.Fatalf("want 401, got %s", got)
			}
		})
	}
}
