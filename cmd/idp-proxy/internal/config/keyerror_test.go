package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/proxy"
)

// fileKey maps the libraries' Go field paths to the file's keys through
// the mapstructure tags: slices keep their index, map keys become
// elements, pkg/idp's fields are the idp section's (Session and Pages
// their own sections), a secret given as a file is found by its name.
func TestFileKey(t *testing.T) {
	for path, want := range map[string]string{
		"Upstream.URL":                       "upstream.url",
		"Routes[2].CORS.AllowedOrigins[0]":   "routes[2].cors.allowed_origins[0]",
		"Upstreams[1].Headers.Email":         "upstreams[1].headers.email",
		"Upstreams[0].Credential":            "upstreams[0].credential",
		"Headers.Claims[X-Tenant]":           "headers.claims.X-Tenant",
		"IDP.AuthPrefix":                     "idp.auth_prefix",
		"ForwardAuth.TrustedCIDRs":           "forward_auth.trusted_cidrs",
		"Assertion.KeyFile":                  "assertion.key_file",
		"Realm":                              "idp.realm",
		"RedirectURI":                        "idp.redirect_uri",
		"Session.CookieDomain":               "session.cookie_domain",
		"Session.PreviousSecrets":            "session.previous_secrets_file",
		"Pages.Colors.Text":                  "pages.colors.text",
		"MaxTokenBytes":                      "", // no such key in the file
		"Routes[0].NoSuchField":              "",
		"UnknownKIDRefreshInterval":          "",
		"ExtensionMethods[3]":                "extension_methods[3]",
		"Routes[0].ClientRoles[realm-admin]": "routes[0].client_roles.realm-admin",
	} {
		if got := fileKey(path); got != want {
			t.Errorf("fileKey(%q) = %q, want %q", path, got, want)
		}
	}
}

// Every field of proxy.Config that has a key in the file maps to it with
// no table to update: a key added to pkg/proxy with its mapstructure tag
// is named in check-config's messages as the file spells it.
func TestFileKeyCoversProxyConfig(t *testing.T) {
	var walk func(t0 reflect.Type, path, key string, depth int)
	n := 0
	walk = func(t0 reflect.Type, path, key string, depth int) {
		for t0.Kind() == reflect.Pointer || t0.Kind() == reflect.Slice {
			if t0.Kind() == reflect.Slice {
				path, key = path+"[0]", key+"[0]"
			}
			t0 = t0.Elem()
		}
		if t0.Kind() != reflect.Struct || depth > 4 {
			return
		}
		for _, f := range reflect.VisibleFields(t0) {
			tag, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
			if !f.IsExported() || f.Anonymous || tag == "-" || tag == "" && opts != "squash" {
				continue
			}
			p, k := f.Name, tag
			if path != "" {
				p, k = path+"."+p, key+"."+k
			}
			if got := fileKey(p); got != k {
				t.Errorf("fileKey(%q) = %q, want %q", p, got, k)
			}
			n++
			walk(f.Type, p, k, depth+1)
		}
	}
	walk(reflect.TypeFor[proxy.Config](), "", "", 0)
	if n < 40 {
		t.Fatalf("walked %d fields of proxy.Config, want all of them", n)
	}
}

// The libraries' errors name Go fields; check-config names the file's
// keys, in the key of the *KeyError and in the message.
func TestLibraryErrorsNamedByFileKeys(t *testing.T) {
	f, err := Load(writeFile(t, "c.yaml", minimalYAML+"headers: {user: X-Same, email: x-same}\nassertion: {lifetime: 2h}\n"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(f, CompileOptions{NoSecrets: true})
	for _, want := range []string{`headers.email "x-same" is the same header as headers.user`, "assertion.lifetime 2h0m0s: want 10s to 1h"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Compile: %v, want %q", err, want)
		}
	}
	var ke *KeyError
	if !errors.As(err, &ke) || !strings.Contains(ke.Key, ".") || strings.ContainsAny(ke.Key, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
		t.Errorf("not a *KeyError of a file key: %#v", ke)
	}
	var fe *proxy.FieldError // the library's error is still there, by Go path
	if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, "Headers.") && !strings.HasPrefix(fe.Field, "Assertion.") {
		t.Errorf("no *proxy.FieldError under the KeyError: %v", err)
	}
}
