package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"
)

// caPEM is a CA certificate in PEM.
func caPEM(t *testing.T) string {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "clients"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

const clientAuthBase = `idp: {issuer_url: "https://issuer.example", client_id: app}
upstream: {url: "http://127.0.0.1:8000"}
`

// tls.client_auth and tls.client_ca_file: the modes map to crypto/tls's,
// and check-config (Compile) reports every unusable combination and an
// unreadable or invalid CA file under its key.
func TestClientAuthConfig(t *testing.T) {
	ca := writeFile(t, "ca.pem", caPEM(t)+caPEM(t))
	for mode, want := range map[string]tls.ClientAuthType{"request": tls.VerifyClientCertIfGiven, "require": tls.RequireAndVerifyClientCert} {
		y := clientAuthBase + "tls: {cert_file: /c.pem, key_file: /k.pem, client_auth: " + mode + ", client_ca_file: " + ca + "}\nclient_cert: {header: ssl-client-cert, format: pem, trusted_cidrs: [10.0.0.0/8]}\n"
		f, err := Load(writeFile(t, "c.yaml", y), LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Compile(f, CompileOptions{}); err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		got, pool, err := f.TLS.ClientTLS()
		if err != nil || got != want || pool == nil {
			t.Fatalf("%s: ClientTLS = %v, %v, %v", mode, got, pool, err)
		}
	}
	if got, pool, err := Default().TLS.ClientTLS(); got != tls.NoClientCert || pool != nil || err != nil {
		t.Fatalf("default: %v %v %v", got, pool, err)
	}
	key := writeFile(t, "key.pem", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
	junk := writeFile(t, "junk.pem", "not pem at all")
	for _, tc := range []struct {
		name, tls, key, want string
	}{
		{"unknown mode", "{cert_file: /c.pem, key_file: /k.pem, client_auth: optional}", "tls.client_auth", `"optional": want none, request or require`},
		{"no CA file", "{cert_file: /c.pem, key_file: /k.pem, client_auth: require}", "tls.client_ca_file", "tls.client_ca_file is required"},
		{"CA file without client_auth", "{cert_file: /c.pem, key_file: /k.pem, client_ca_file: " + ca + "}", "tls.client_ca_file", "with none no client certificate is asked for"},
		{"no TLS", "{client_auth: request, client_ca_file: " + ca + "}", "tls.client_auth", "needs TLS on the listener"},
		{"missing CA file", "{cert_file: /c.pem, key_file: /k.pem, client_auth: request, client_ca_file: /nonexistent/ca.pem}", "tls.client_ca_file", "no such file"},
		{"a key, not a certificate", "{cert_file: /c.pem, key_file: /k.pem, client_auth: request, client_ca_file: " + key + "}", "tls.client_ca_file", "a PRIVATE KEY block"},
		{"not PEM", "{cert_file: /c.pem, key_file: /k.pem, client_auth: request, client_ca_file: " + junk + "}", "tls.client_ca_file", "not a PEM file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Load(writeFile(t, "c.yaml", clientAuthBase+"tls: "+tc.tls+"\n"), LoadOptions{})
			if err == nil {
				_, err = Compile(f, CompileOptions{})
			}
			var ke *KeyError
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ke) {
				t.Fatalf("err = %v, want %q under %s", err, tc.want, tc.key)
			}
			if !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("err = %v does not name %s", err, tc.key)
			}
		})
	}
}

// TestReadmeClientCertSnippet checks the configuration of the README's
// "Client certificates (mutual TLS)" section (its files exist only where
// it is deployed: checked as check-config --no-secrets does), and the
// same with its ingress lines uncommented.
func TestReadmeClientCertSnippet(t *testing.T) {
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Client certificates (mutual TLS)\n")
	if !ok {
		t.Fatal(`README.md has no "## Client certificates (mutual TLS)" section`)
	}
	m := yamlBlock.FindStringSubmatch(section)
	if m == nil {
		t.Fatal("no YAML block")
	}
	ingress := strings.NewReplacer("# client_cert:", "client_cert:", "#   header", "  header", "#   format", "  format", "#   trusted", "  trusted").Replace(m[1])
	for _, y := range []string{m[1], ingress} {
		f, err := Load(writeFile(t, "readme.yaml", y), LoadOptions{})
		if err == nil {
			_, err = Compile(f, CompileOptions{NoSecrets: true})
		}
		if err != nil {
			t.Fatalf("README client certificate block: %v\n%s", err, y)
		}
		if y == ingress && f.ClientCert.Format != "pem" {
			t.Fatalf("the ingress lines were not read: %+v", f.ClientCert)
		}
	}
}

// The libraries name the fields of client_cert, routes[].client_cert and
// the upstreams' credentials by their Go paths; check-config says their
// YAML keys, in the error's key and in the message.
func TestClientCertAndCredentialErrorsNameKeys(t *testing.T) {
	for _, tc := range []struct{ yaml, key, want string }{
		{"routes: [{match: /x, client_cert: {dns: [\"a.*.org\"]}}]", "routes[0].client_cert.dns", `routes[0] "/x": client_cert.dns: "a.*.org"`},
		{"routes: [{match: /x, client_cert: {token: maybe}}]", "routes[0].client_cert.token", `client_cert.token: "maybe"`},
		{"routes: [{match: /x, public: true, client_cert: {}}]", "routes[0].client_cert", "public excludes client_cert (use client_cert.token: optional"},
		{"routes: [{match: /x, dpop: always}]", "routes[0].dpop", `routes[0] "/x": dpop "always"`},
		{"client_cert: {format: pem}", "client_cert.header", "client_cert.format and client_cert.trusted_cidrs need client_cert.header"},
		{"client_cert: {header: ssl-client-cert}", "client_cert.format", "client_cert.format is required with client_cert.header"},
		{"upstreams: [{match: a.test/, url: \"http://127.0.0.1:1\", scopes: [a]}]", "upstreams[0].scopes", "upstreams[0].scopes are requested by credential exchange and client_credentials: set upstreams[0].credential"},
		{"upstreams: [{match: a.test/, url: \"http://127.0.0.1:1\", credential: client_credentials}]", "upstreams[0].credential", "upstreams[0].credential client_credentials needs idp.client_secret"},
	} {
		y := `idp: {issuer_url: "https://issuer.example", client_id: app}` + "\n" + tc.yaml + "\n"
		if !strings.HasPrefix(tc.yaml, "upstreams") {
			y += "upstream: {url: \"http://127.0.0.1:8000\"}\n"
		}
		f, err := Load(writeFile(t, "c.yaml", y), LoadOptions{})
		if err == nil {
			_, err = Compile(f, CompileOptions{})
		}
		named := map[string]bool{}
		errorKeys(err, named)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !named[tc.key] {
			t.Errorf("%s: %v, want %q under %s", tc.yaml, err, tc.want, tc.key)
		}
	}
}
