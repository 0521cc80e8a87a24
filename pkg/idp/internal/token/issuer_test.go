package token

import (
	"testing"
)

func TestIssuerOf(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{`{"iss":"https://a.example"}`, "https://a.example", true},
		{` { "sub" : "x" , "aud":["a",{"iss":"inner"}], "iss" : "https://b.example/" } `, "https://b.example/", true},
		{`{"i\u0073s":"https://c.example"}`, "https://c.example", true},
		{`{"iss":"https:\/\/d.example"}`, "https://d.example", true},
		{`{"iss":"a","iss":"b"}`, "a", true}, // the first; DecodeClaims refuses the second
		{`{"ISS":"https://a.example"}`, "", false},
		{`{"iss":null}`, "", false},
		{`{"iss":1}`, "", false},
		{`{"iss":["https://a.example"]}`, "", false},
		{`{"sub":"x"}`, "", false},
		{`{}`, "", false},
		{`[]`, "", false},
		{``, "", false},
		{`{"sub":"x" "iss":"a"}`, "", false},
		{`{"sub":"x","iss":"a`, "", false},
		{`{"sub":tru,"iss":"a"}`, "", false},
	} {
		got, ok := IssuerOf([]byte(tc.in))
		if ok != tc.ok || string(got) != tc.want {
			t.Errorf("IssuerOf(%s) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzIssuerOf checks the issuer scanner against the claim decoder: it
// never panics, and whenever the decoder accepts a payload with an iss,
// the scanner names the same issuer (a token is never routed to the keys
// of an issuer other than the one its verified claims name).
func FuzzIssuerOf(f *testing.F) {
	for _, seed := range []string{
		`{"iss":"https://a.example","sub":"u"}`, `{"sub":"u","i\u0073s":"x"}`, `{"iss":"a\"b"}`,
		`{"a":{"iss":"x"},"iss":"y"}`, `{"iss":null}`, ` {"iss" : "x" } `, `{"iss":"x","iss":"y"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		iss, ok := IssuerOf(data)
		c, err := DecodeClaims(nil, data)
		if err != nil {
			return
		}
		if c.Issuer != "" && (!ok || string(iss) != c.Issuer) {
			t.Fatalf("IssuerOf(%q) = %q, %v; the decoder reads %q", data, iss, ok, c.Issuer)
		}
		if c.Issuer == "" && ok && len(iss) > 0 {
			t.Fatalf("IssuerOf(%q) = %q; the decoder reads no iss", data, iss)
		}
	})
}
