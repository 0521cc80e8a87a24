package token

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeClaims checks the claim decoder against encoding/json: it
// never panics; it accepts an object only when encoding/json finds it
// valid; it accepts every valid UTF-8 object of reasonable depth; it
// refuses exactly the objects that name a member twice anywhere; and the
// claims it reads are the exactly-named members encoding/json sees.
func FuzzDecodeClaims(f *testing.F) {
	for _, seed := range []string{
		`{"iss":"https://sso.example.com/realms/demo","sub":"u","aud":["a","b"],"exp":1795443825,"iat":1.5e9}`,
		`{"realm_access":{"roles":["a","b"]},"REALM_ACCESS":{"roles":["admin"]}}`,
		`{"resource_access":{"c":{"roles":["x"]},"d":{"roles":"y"}},"scope":"openid email"}`,
		`{"exp":"1795443825"}`, `{"exp":1,"exp":2}`, `{"\u0065xp":1}`, `{"a":[1,{"b":null}],"c":true}`,
		`{"email_verified":true,"scp":["a",1,"b"]}`, ` { } `, `[]`, `{"a":"\ud800"}`, `{"x":-0.0e+1}`,
		`{"exp":1e400,"nbf":1e19,"iat":-9223372036854775809}`,
		`{"a":{"b":1,"b":2}}`, `{"a":[{"x":1},{"x":1,"\u0078":2}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeClaims(NewInterner(), data)
		validJSON := json.Valid(data)
		trimmed := bytes.TrimSpace(data)
		isObject := len(trimmed) > 0 && trimmed[0] == '{'
		if err == nil && !(validJSON && isObject) {
			t.Fatalf("accepted what encoding/json refuses: %q", data)
		}
		var e *Error
		if dup := errors.As(err, &e) && strings.HasPrefix(e.Reason, "duplicate "); (err == nil || dup) && validJSON &&
			dup != hasDuplicateName(data) {
			t.Fatalf("duplicate refused: %v, encoding/json's tokens say %v: %q", dup, hasDuplicateName(data), data)
		}
		if err != nil {
			if validJSON && isObject && utf8.Valid(data) && bytes.Count(data, []byte("{"))+bytes.Count(data, []byte("[")) < maxJSONDepth &&
				!bytes.Contains(data, []byte("duplicate")) && errorIsSyntax(err) {
				t.Fatalf("refused a valid object as malformed: %q: %v", data, err)
			}
			return
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) != nil {
			t.Fatalf("encoding/json cannot decode what was accepted: %q", data)
		}
		if raw, ok := m["iss"]; ok && string(raw) != "null" {
			var iss string
			if json.Unmarshal(raw, &iss) == nil && iss != c.Issuer {
				t.Fatalf("iss %q, encoding/json reads %q", c.Issuer, iss)
			}
		}
		if raw, ok := m["exp"]; ok && c.HasExp {
			var exp float64
			if err := json.Unmarshal(raw, &exp); err != nil {
				exp = math.Inf(1) // beyond float64 (1e400): ±Inf, see FuzzNumericDate
				if raw[0] == '-' {
					exp = math.Inf(-1)
				}
			}
			if exp != c.Exp {
				t.Fatalf("exp %v, encoding/json reads %s", c.Exp, raw)
			}
		}
	})
}

// errorIsSyntax reports whether err is the decoder's "malformed" answer
// (not a claim rule such as a duplicate or a non-numeric exp).
func errorIsSyntax(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Reason == "malformed token"
}

// BenchmarkDecodeClaims decodes the payload of a Keycloak access token.
func BenchmarkDecodeClaims(b *testing.B) {
	payload := []byte(`{"exp":1795443825,"iat":1795440225,"jti":"onrtac:8d4c4b55-8a3c-4c1b-a0f3-8a1f0e4d6a21",` +
		`"iss":"https://sso.example.com/realms/demo","aud":["shortener","account"],"sub":"5c8e3b0e-1f2a-4b7c-9d6e-2a4f8b1c3d5e",` +
		`"typ":"Bearer","azp":"shortener","sid":"0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d","acr":"1",` +
		`"allowed-origins":["https://app.example.com"],"realm_access":{"roles":["default-roles-demo","offline_access","uma_authorization","creator"]},` +
		`"resource_access":{"shortener":{"roles":["links:write","links:read"]},"account":{"roles":["manage-account","manage-account-links","view-profile"]}},` +
		`"scope":"openid profile email","email_verified":true,"name":"Alice Example","preferred_username":"alice",` +
		`"given_name":"Alice","family_name":"Example","email":"alice@example.com"}`)
	in := NewInterner()
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeClaims(in, payload); err != nil {
			b.Fatal(err)
		}
	}
}
