package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
)

const sessionDPoPBase = `upstream: {url: "http://127.0.0.1:8000"}
idp: {server_url: "http://127.0.0.1:8080", realm: demo, client_id: shortener, client_secret: s3cr3t-value,
  include_routes: true, redirect_uri: "http://127.0.0.1:4180/auth/callback",
  session_secret: "0123456789abcdef0123456789abcdef"}
session: {enabled: true, `

func pemKey(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// session.dpop_key_file and dpop_accepted_key_files are read into
// idp.SessionConfig.DPoPKeys, the signing key first; check-config refuses
// a missing file, a file without a private key, and accepted keys without
// a signing key, naming the key.
func TestSessionDPoPKeyFiles(t *testing.T) {
	cur := writeFile(t, "cur.pem", pemKey(t))
	next := writeFile(t, "next.pem", pemKey(t))
	f, err := Load(writeFile(t, "c.yaml", sessionDPoPBase+"dpop_key_file: "+cur+", dpop_accepted_key_files: ["+next+"]}\n"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(f, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.IDP.Session == nil || len(c.IDP.Session.DPoPKeys) != 2 {
		t.Fatalf("session DPoP keys: %+v", c.IDP.Session)
	}
	notKey := writeFile(t, "cert.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	for _, tc := range []struct{ yaml, want string }{
		{"dpop_key_file: /nonexistent/key.pem}", "session.dpop_key_file"},
		{"dpop_key_file: " + notKey + "}", "session.dpop_key_file"},
		{"dpop_key_file: " + cur + ", dpop_accepted_key_files: [/nonexistent.pem]}", "session.dpop_accepted_key_files"},
		{"dpop_accepted_key_files: [" + next + "]}", "session.dpop_key_file"},
	} {
		f, err := Load(writeFile(t, "c.yaml", sessionDPoPBase+tc.yaml+"\n"), LoadOptions{})
		if err == nil {
			_, err = f.Check()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", tc.yaml, err, tc.want)
		}
	}
}

// The session key's PEM parser refuses whatever is not one private key,
// never panicking.
func FuzzParsePEMSigner(f *testing.F) {
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n"))
	f.Add([]byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"))
	f.Add([]byte("-----BEGIN RSA PRIVATE KEY-----\n\n-----END RSA PRIVATE KEY-----\n"))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"))
	f.Add([]byte("not pem"))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := parsePEMSigner("f.pem", b)
		if (k == nil) == (err == nil) {
			t.Fatalf("key %v and error %v", k, err)
		}
	})
}
