package exchange

import (
	"errors"
	"testing"
)

// FuzzParseTokenDoc: any answer is a token or an outage, never a panic;
// a token has an access_token and token_type Bearer.
func FuzzParseTokenDoc(f *testing.F) {
	for _, s := range []string{
		`{"access_token":"a","token_type":"Bearer","expires_in":300,"issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}`,
		`{"access_token":"a","token_type":"bearer","expires_in":"300"}`,
		`{"access_token":"a","token_type":"N_A"}`,
		`{"access_token":"a","token_type":"Bearer","expires_in":-1}`,
		`{"access_token":"a","token_type":"Bearer","expires_in":1e99}`,
		`{"access_token":"","token_type":"Bearer"}`,
		`[]`, `null`, `{"access_token":1}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := parseTokenDoc(body)
		if err != nil {
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("error %v does not match ErrUnavailable", err)
			}
			return
		}
		if d.AccessToken == "" || !tokenTypeBearer(d.TokenType) || d.expiresIn < 0 {
			t.Fatalf("accepted %q", body)
		}
	})
}

// FuzzParseDiscovery: any discovery document gives an absolute http(s)
// token endpoint of the issuer asked for, or an outage; never a panic.
func FuzzParseDiscovery(f *testing.F) {
	const iss = "https://sso.example.com/realms/demo"
	for _, s := range []string{
		`{"issuer":"https://sso.example.com/realms/demo","token_endpoint":"https://sso.example.com/realms/demo/protocol/openid-connect/token"}`,
		`{"issuer":"https://sso.example.com/realms/demo/","token_endpoint":"http://x/t"}`,
		`{"issuer":"https://evil.example","token_endpoint":"https://x/t"}`,
		`{"issuer":"https://sso.example.com/realms/demo","token_endpoint":"/token"}`,
		`{"issuer":1}`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		u, err := parseDiscovery(body, iss)
		if err != nil {
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("error %v does not match ErrUnavailable", err)
			}
			return
		}
		if !absoluteHTTP(u) {
			t.Fatalf("token endpoint %q accepted", u)
		}
	})
}
