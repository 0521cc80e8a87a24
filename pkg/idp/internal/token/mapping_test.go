package token

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func mustPath(t testing.TB, s string) Path {
	t.Helper()
	p, err := ParsePath(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fuzzMapping is the generic preset with the groups of a nested path and
// the scopes of a keys(...) path.
func fuzzMapping(t testing.TB) *Mapping {
	m, err := NewMapping(Mapping{
		Username: []Path{mustPath(t, "preferred_username"), mustPath(t, "email"), mustPath(t, "sub")},
		Email:    []Path{mustPath(t, "email")},
		Roles:    []Path{mustPath(t, "roles")},
		Groups:   []Path{mustPath(t, `["https://example.com/app"].groups`)},
		Scopes:   []Path{mustPath(t, "keys(urn:zitadel:iam:org:project:roles)")},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// FuzzDecodeMapped checks the mapped decoding against encoding/json: it
// never panics, accepts only valid JSON objects, and the roles it reads
// are those encoding/json sees under the exact name.
func FuzzDecodeMapped(f *testing.F) {
	for _, seed := range []string{
		`{"sub":"u","roles":["a","b"],"https://example.com/app":{"groups":["g"]},"urn:zitadel:iam:org:project:roles":{"x":{}}}`,
		`{"roles":"a"}`, `{"roles":["a"],"roles":["b"]}`, `{"https://example.com/app":"x"}`,
		`{"urn:zitadel:iam:org:project:roles":{"a":1,"a":2}}`, `{"preferred_username":"","email":"e@x","sub":"s"}`,
		`{"roles":null,"email":7}`, `{"ROLES":["admin"],"roles":[]}`,
	} {
		f.Add([]byte(seed))
	}
	m := fuzzMapping(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeMapped(NewInterner(), data, m)
		if err != nil {
			return
		}
		if !json.Valid(data) || c.Mapped == nil {
			t.Fatalf("accepted %q (valid JSON: %v)", data, json.Valid(data))
		}
		var top map[string]json.RawMessage
		if json.Unmarshal(data, &top) != nil {
			t.Fatalf("encoding/json cannot decode what was accepted: %q", data)
		}
		var roles []string
		if raw, ok := top["roles"]; ok && string(raw) != "null" {
			if json.Unmarshal(raw, &roles) != nil || !reflect.DeepEqual(roles, c.Mapped.Roles) && len(roles)+len(c.Mapped.Roles) > 0 {
				t.Fatalf("roles %q, encoding/json reads %s", c.Mapped.Roles, raw)
			}
		} else if c.Mapped.Roles != nil {
			t.Fatalf("roles %q from a payload without them", c.Mapped.Roles)
		}
	})
}

func TestDecodeMapped(t *testing.T) {
	m := fuzzMapping(t)
	c, err := DecodeMapped(nil, []byte(`{"sub":"s","preferred_username":"","email":"e@x","roles":["a"],`+
		`"https://example.com/app":{"other":1,"groups":["g1","g2"]},"urn:zitadel:iam:org:project:roles":{"k1":{},"k2":[]}}`), m)
	if err != nil {
		t.Fatal(err)
	}
	want := &Mapped{Username: "e@x", Email: "e@x", Roles: []string{"a"}, Groups: []string{"g1", "g2"}, Scopes: []string{"k1", "k2"}}
	if !reflect.DeepEqual(c.Mapped, want) {
		t.Errorf("got %+v, want %+v", c.Mapped, want)
	}
	for payload, reason := range map[string]string{
		`{"roles":["a"],"roles":["b"]}`:                            "duplicate claim roles",
		`{"https://example.com/app":{"groups":[],"groups":["x"]}}`: "duplicate name groups inside claim https://example.com/app",
		`{"https://example.com/app":[]}`:                           "not an object on the way",
		`{"urn:zitadel:iam:org:project:roles":["a"]}`:              "must be an object",
		`{"sub":1}`:                   "malformed sub claim",
		`{"preferred_username":true}`: "claim preferred_username must be a string",
	} {
		_, err := DecodeMapped(nil, []byte(payload), m)
		if err == nil || !strings.Contains(err.Error(), reason) {
			t.Errorf("%s: %v, want %q", payload, err, reason)
		}
	}
}

// BenchmarkDecodeMapped decodes an Entra-shaped payload with the generic
// preset's paths.
func BenchmarkDecodeMapped(b *testing.B) {
	payload := []byte(`{"aud":"shortener","iss":"https://login.example.com/72f988bf/v2.0","iat":1795440225,"nbf":1795440225,"exp":1795443825,` +
		`"email":"alice@example.com","groups":["a1b2c3d4-0000-4000-8000-000000000001","a1b2c3d4-0000-4000-8000-000000000002"],` +
		`"name":"Alice Example","oid":"0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9","preferred_username":"alice@example.com",` +
		`"roles":["Reports.Read","creator"],"scp":["User.Read","Files.Read"],"sub":"AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ",` +
		`"tid":"72f988bf-86f1-41af-91ab-2d7cd011db47","uti":"fqiBqXLPj0eQa82S-IYFAA","ver":"2.0"}`)
	m, err := NewMapping(Mapping{
		Username: []Path{mustPath(b, "preferred_username"), mustPath(b, "email"), mustPath(b, "sub")},
		Email:    []Path{mustPath(b, "email")},
		Roles:    []Path{mustPath(b, "roles")},
		Groups:   []Path{mustPath(b, "groups")},
		Scopes:   []Path{mustPath(b, "scope"), mustPath(b, "scp")},
	})
	if err != nil {
		b.Fatal(err)
	}
	in := NewInterner()
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeMapped(in, payload, m); err != nil {
			b.Fatal(err)
		}
	}
}
