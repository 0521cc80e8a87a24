package idp

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// bodyTransport answers every request with 200 and body, in memory.
type bodyTransport []byte

func (b bodyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Body: io.NopCloser(bytes.NewReader(b)), Request: req, Header: http.Header{}}, nil
}

// FuzzDiscover: any discovery document is refused with an error, or
// accepted naming the configured issuer byte for byte, with http(s)
// endpoints and a JWKS URI; never a panic. Only a Keycloak realm's absent
// endpoints are filled in.
func FuzzDiscover(f *testing.F) {
	const iss = "https://sso.example.com/tenant"
	for _, doc := range []string{
		`{"issuer":"` + iss + `","jwks_uri":"https://sso.example.com/keys","token_endpoint":"https://sso.example.com/t"}`,
		`{"issuer":"` + iss + `/","jwks_uri":"https://sso.example.com/keys"}`,
		`{"issuer":"` + iss + `"}`,
		`{"issuer":"` + iss + `","jwks_uri":"javascript:alert(1)"}`,
		`{"issuer":"` + iss + `","issuer":"https://evil"}`,
		`{"issuer":null,"jwks_uri":[]}`,
		`[]`, ``, `{"issuer":"\u0068ttps://sso.example.com/tenant","jwks_uri":"https://x/k"}`,
	} {
		f.Add([]byte(doc), iss, false)
		f.Add([]byte(doc), iss+"/", true)
	}
	f.Fuzz(func(t *testing.T, doc []byte, issuer string, keycloak bool) {
		if _, err := url.Parse(issuer); err != nil || checkIssuerURL(issuer) != nil {
			return // Config.validate refuses it before discovery
		}
		c := &http.Client{Transport: bodyTransport(doc)}
		m, err := discover(t.Context(), c, issuer, keycloak)
		if err != nil {
			return
		}
		if m.Issuer != issuer {
			t.Fatalf("accepted issuer %q for %q", m.Issuer, issuer)
		}
		if m.JWKSURI == "" {
			t.Fatal("accepted without jwks_uri")
		}
		for _, e := range m.endpoints() {
			if *e.v != "" && checkHTTPURL(*e.v) != nil {
				t.Fatalf("%s %q accepted", e.name, *e.v)
			}
			if !keycloak && strings.Contains(*e.v, "/protocol/openid-connect") && !bytes.Contains(doc, []byte("openid-connect")) {
				t.Fatalf("%s %q guessed for a plain issuer", e.name, *e.v)
			}
		}
	})
}

// FuzzIssuerURL: an issuer URL Config.Validate accepts is an http(s) URL
// with a host and no query or fragment, and Issuer returns it unchanged.
func FuzzIssuerURL(f *testing.F) {
	for _, s := range []string{"https://sso.example.com", "https://sso.example.com/", "http://127.0.0.1:8080/realms/demo", "https://x?y", "https://x#y", "https://u:p@x", " https://x", "https://x:0", "HTTPS://X/", "https://[::1]:443/a%2Fb", "https://x/a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := Config{IssuerURL: s, ClientID: "app"}
		err := c.Validate()
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error without ErrConfig: %v", err)
			}
			return
		}
		if c.WithDefaults().Issuer() != s {
			t.Fatalf("Issuer() = %q, want %q", c.WithDefaults().Issuer(), s)
		}
		u, perr := url.Parse(s)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.ContainsAny(s, "?# \t\r\n\x00\x7f") {
			t.Fatalf("accepted %q", s)
		}
	})
}
