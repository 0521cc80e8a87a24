package token

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParsePath(t *testing.T) {
	ok := map[string]Path{
		"roles":                                   {Names: []string{"roles"}},
		"realm_access.roles":                      {Names: []string{"realm_access", "roles"}},
		"resource_access.my-client.roles":         {Names: []string{"resource_access", "my-client", "roles"}},
		"https://example.com/roles":               {Names: []string{"https://example.com/roles"}},
		"urn:zitadel:iam:org:project:roles":       {Names: []string{"urn:zitadel:iam:org:project:roles"}},
		"keys(urn:zitadel:iam:org:project:roles)": {Names: []string{"urn:zitadel:iam:org:project:roles"}, Keys: true},
		"keys(realm_access)":                      {Names: []string{"realm_access"}, Keys: true},
		`["a.b"]`:                                 {Names: []string{"a.b"}},
		`["https://example.com/app"].roles`:       {Names: []string{"https://example.com/app", "roles"}},
		`resource_access["my.app"].roles`:         {Names: []string{"resource_access", "my.app", "roles"}},
		`a["b"]["c"]`:                             {Names: []string{"a", "b", "c"}},
		`["keys(x)"]`:                             {Names: []string{"keys(x)"}},
		`["sp ace\u0041"]`:                        {Names: []string{"sp aceA"}},
		"rôles":                                   {Names: []string{"rôles"}},
		"a(b)":                                    {Names: []string{"a(b)"}},
	}
	for in, want := range ok {
		got, err := ParsePath(in)
		if err != nil {
			t.Errorf("ParsePath(%q): %v", in, err)
			continue
		}
		want.Text = in
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ParsePath(%q) = %+v, want %+v", in, got, want)
		}
	}
	bad := map[string]string{
		"":                       "empty",
		"a..b":                   "empty name",
		".a":                     "empty name",
		"a.":                     "empty name",
		" roles":                 `' '`,
		"roles ":                 `' '`,
		"a b":                    `' '`,
		"a\tb":                   `'\t'`,
		"https://x/ roles":       "space",
		"urn:a\x00":              "control",
		`a"b`:                    `'"'`,
		"a]":                     `']'`,
		"keys(":                  "closing",
		"keys()":                 "keys() names no claim",
		"keys(a":                 "closing",
		"keys(a))":               `')'`,
		`[a]`:                    "JSON string in brackets",
		`["a"`:                   "want ]",
		`["a`:                    "does not end",
		`[""]`:                   "empty name",
		`["\x"]`:                 "bad escape",
		`a.["b"]`:                "no '.' before",
		`["a"]b`:                 "want '.' or '['",
		"a.b.c.d.e.f.g.h.i":      "more than 8",
		strings.Repeat("a", 513): "longer than 512",
		"a\xffb":                 "UTF-8",
	}
	for in, want := range bad {
		_, err := ParsePath(in)
		var pe *PathError
		if !errors.As(err, &pe) {
			t.Errorf("ParsePath(%q): %v, want a *PathError", in, err)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePath(%q): %v, want it to say %q", in, err, want)
		}
		if pe.Offset < 0 || pe.Offset > len(in) {
			t.Errorf("ParsePath(%q): offset %d out of range", in, pe.Offset)
		}
	}
}

// FuzzParsePath checks that ParsePath never panics, that every error is a
// *PathError with an offset inside the text, and that what it accepts has
// non-empty names within the bounds.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"roles", "realm_access.roles", "https://example.com/roles", "keys(urn:zitadel:iam:org:project:roles)",
		`["a.b"].c`, `a["b"]`, "a..b", `["\u00e9"]`, "keys(", `[""]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePath(s)
		if err != nil {
			var pe *PathError
			if !errors.As(err, &pe) || pe.Offset < 0 || pe.Offset > len(s) {
				t.Fatalf("ParsePath(%q): %#v", s, err)
			}
			return
		}
		if p.Text != s || len(p.Names) == 0 || len(p.Names) > MaxPathNames {
			t.Fatalf("ParsePath(%q) = %+v", s, p)
		}
		for _, n := range p.Names {
			if n == "" {
				t.Fatalf("ParsePath(%q): empty name in %+v", s, p)
			}
		}
		if len(p.Names) == 1 && !p.Keys && !strings.ContainsAny(s, `[.`) && p.Names[0] != s {
			t.Fatalf("ParsePath(%q): a plain name read as %q", s, p.Names[0])
		}
	})
}
