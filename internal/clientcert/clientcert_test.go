package clientcert

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"math/big"
	"net/url"
	"strings"
	"testing"
	"time"
)

// testCert makes a self-signed certificate named cn.
func testCert(t testing.TB, cn string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func pemOf(c *x509.Certificate) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}))
}

// escape encodes as nginx's $ssl_client_escaped_cert and Envoy's Cert do.
func escape(s string) string { return url.PathEscape(s) }

func hashOf(c *x509.Certificate) string {
	s := sha256.Sum256(c.Raw)
	return hex.EncodeToString(s[:])
}

func TestParse(t *testing.T) {
	client, other := testCert(t, "client"), testCert(t, "other")
	b64 := base64.StdEncoding.EncodeToString(client.Raw)
	// Traefik strips the PEM armour and line breaks.
	traefik := strings.NewReplacer("-----BEGIN CERTIFICATE-----", "", "-----END CERTIFICATE-----", "", "\n", "").Replace(pemOf(client))
	for _, tc := range []struct {
		name   string
		f      Format
		value  string
		want   *x509.Certificate // nil: no certificate
		errSub string            // non-empty: ErrMalformed naming this
	}{
		{"empty is no certificate", FormatXFCC, "", nil, ""},
		{"blank is no certificate", FormatPEM, "  ", nil, ""},
		{"Caddy's placeholder without a certificate", FormatDER, "{http.request.tls.client.certificate_der_base64}", nil, ""},
		{"braces around a certificate are no placeholder", FormatDER, "{" + b64 + "}", nil, "not base64"},
		{"nginx escaped PEM", FormatPEM, escape(pemOf(client)), client, ""},
		{"PEM with the chain after it", FormatPEM, escape(pemOf(client) + pemOf(other)), client, ""},
		{"query-style escaping (space as +)", FormatPEM, url.QueryEscape(pemOf(client)), client, ""},
		{"unescaped PEM folded on one line", FormatPEM, strings.ReplaceAll(pemOf(client), "\n", " "), client, ""},
		{"PEM of a key", FormatPEM, escape("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), nil, "not a CERTIFICATE"},
		{"not PEM", FormatPEM, "hello", nil, "no PEM block"},
		{"no END", FormatPEM, escape("-----BEGIN CERTIFICATE-----\n" + b64), nil, "no PEM END"},
		{"bad escape", FormatPEM, "%zz", nil, "not URL-encoded"},
		{"garbage DER in PEM", FormatPEM, escape("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), nil, "not an X.509 certificate"},
		{"Traefik base64 DER", FormatDER, traefik, client, ""},
		{"Traefik chain: the first is the client's", FormatDER, b64 + "," + base64.StdEncoding.EncodeToString(other.Raw), client, ""},
		{"older Traefik, URL-escaped", FormatDER, url.QueryEscape(b64), client, ""},
		{"RFC 9440 Client-Cert", FormatDER, ":" + b64 + ":", client, ""},
		{"unpadded base64", FormatDER, strings.TrimRight(b64, "="), client, ""},
		{"base64url is not base64", FormatDER, base64.URLEncoding.EncodeToString(client.Raw) + "_", nil, "not base64"},
		{"DER with trailing bytes", FormatDER, base64.StdEncoding.EncodeToString(append(bytes.Clone(client.Raw), 0)), nil, "not an X.509"},
		{"XFCC Cert", FormatXFCC, `By=spiffe://cluster/ns/ingress;Hash=` + hashOf(client) + `;Cert="` + escape(pemOf(client)) + `";Subject="CN=client";URI=;DNS=a;DNS=b`, client, ""},
		{"XFCC keys are case-insensitive", FormatXFCC, `cert=` + escape(pemOf(client)), client, ""},
		{"XFCC Chain without Cert", FormatXFCC, `Chain="` + escape(pemOf(client)+pemOf(other)) + `"`, client, ""},
		{"XFCC last element is the nearest proxy's", FormatXFCC, `Cert="` + escape(pemOf(other)) + `",By=x;Cert="` + escape(pemOf(client)) + `"`, client, ""},
		{"XFCC quoted comma in an earlier element", FormatXFCC, `Subject="CN=a,O=b";Cert=` + escape(pemOf(other)) + `,Cert=` + escape(pemOf(client)), client, ""},
		{"XFCC Hash of another certificate", FormatXFCC, `Hash=` + hashOf(other) + `;Cert=` + escape(pemOf(client)), nil, "Hash is not the SHA-256"},
		{"XFCC Hash not hex", FormatXFCC, `Hash=zz;Cert=` + escape(pemOf(client)), nil, "Hash is not the SHA-256"},
		{"XFCC without Cert", FormatXFCC, `By=x;Hash=` + hashOf(client), nil, "has no Cert"},
		{"XFCC Cert twice", FormatXFCC, `Cert=` + escape(pemOf(client)) + `;Cert=` + escape(pemOf(other)), nil, "repeats Cert"},
		{"XFCC trailing comma", FormatXFCC, `Cert=` + escape(pemOf(client)) + `,`, nil, "empty"},
		{"XFCC unterminated quote", FormatXFCC, `Cert="` + escape(pemOf(client)), nil, "unterminated"},
		{"XFCC stray quote", FormatXFCC, `Cert=ab"c"`, nil, "stray quote"},
		{"XFCC pair without =", FormatXFCC, `Cert`, nil, "not key=value"},
		{"oversized", FormatDER, strings.Repeat("A", MaxValueBytes+1), nil, "exceeds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.f, tc.value)
			if tc.errSub != "" {
				if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.errSub) {
					t.Fatalf("err = %v, want ErrMalformed naming %q", err, tc.errSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tc.want == nil) || got != nil && !got.Equal(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseFormat(t *testing.T) {
	for _, f := range Formats {
		if g, err := ParseFormat(strings.ToUpper(string(f))); err != nil || g != f {
			t.Fatalf("ParseFormat(%q) = %q, %v", f, g, err)
		}
		if DefaultHeader(f) == "" {
			t.Fatalf("no default header for %q", f)
		}
	}
	if _, err := ParseFormat("envoy"); err == nil {
		t.Fatal("unknown format accepted")
	}
	if _, err := Parse("envoy", "x"); err == nil {
		t.Fatal("unknown format parsed")
	}
}

// The parsers never panic, and a certificate they return is one they
// read: its DER parses again to the same certificate.
func fuzzFormat(f *testing.F, format Format, seeds ...string) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		c, err := Parse(format, v)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if c != nil {
			if c2, err := x509.ParseCertificate(c.Raw); err != nil || !c2.Equal(c) {
				t.Fatalf("returned certificate does not round-trip: %v", err)
			}
		}
	})
}

func FuzzParseXFCC(f *testing.F) {
	c := testCert(f, "seed")
	fuzzFormat(f, FormatXFCC,
		`By=spiffe://x;Hash=`+hashOf(c)+`;Cert="`+escape(pemOf(c))+`";Subject="CN=seed";URI=;DNS=a`,
		`Cert=`+escape(pemOf(c))+`,Cert=`+escape(pemOf(c)),
		`Subject="a\"b,c;d=e";Chain="`+escape(pemOf(c))+`"`,
		`By=x;Hash=00`, `"`, `a=";`, `,`, `Cert=%`)
}

func FuzzParseEscapedPEM(f *testing.F) {
	c := testCert(f, "seed")
	fuzzFormat(f, FormatPEM, escape(pemOf(c)), url.QueryEscape(pemOf(c)),
		"-----BEGIN CERTIFICATE-----AAAA-----END CERTIFICATE-----", "-----BEGIN+X-----", "%")
}

func FuzzParseBase64DER(f *testing.F) {
	c := testCert(f, "seed")
	b64 := base64.StdEncoding.EncodeToString(c.Raw)
	fuzzFormat(f, FormatDER, b64, ":"+b64+":", url.QueryEscape(b64)+",AAAA", "::", "%", ",")
}

func BenchmarkParseXFCC(b *testing.B) {
	c := testCert(b, "bench")
	v := `By=spiffe://x;Hash=` + hashOf(c) + `;Cert="` + escape(pemOf(c)) + `"`
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseXFCC(v); err != nil {
			b.Fatal(err)
		}
	}
}
