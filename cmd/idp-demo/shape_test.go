package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// claimsOf decodes a JWT's payload, unverified (the proxy verifies it).
func claimsOf(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", tok)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// idp-demo --shape entra|auth0|generic runs the development provider as
// a plain issuer whose access tokens (service and user) have that
// provider's claims, and the proxy configured as the README's Providers
// section does (issuer URL, claim mapping): a service token and alice's
// token create links through the proxy, and the shortener greets alice by
// the username the mapping reads, never a GUID.
func TestDemoShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole stack")
	}
	for _, tc := range []struct {
		shape    Shape
		claims   []string // present in both tokens
		absent   []string
		username string // alice's, as the shortener sees it
	}{
		{ShapeEntra, []string{"oid", "tid", "roles", "ver"}, []string{"realm_access", "typ", "resource_access"}, "alice@example.com"},
		{ShapeAuth0, []string{auth0RolesClaim, "permissions"}, []string{"realm_access", "typ", "roles"}, "auth0|user-alice"},
		{ShapeGeneric, []string{"roles"}, []string{"realm_access", "typ"}, "alice"},
	} {
		t.Run(string(tc.shape), func(t *testing.T) {
			seen := &upstreamLog{}
			ep, banner, _ := startDemo(t, Options{DataDir: "memory:", Shape: tc.shape, seenByShortener: seen.record})
			if ep.Issuer != ep.Provider {
				t.Errorf("issuer %q: want the plain issuer %q", ep.Issuer, ep.Provider)
			}
			for _, want := range []string{"issuer_url " + ep.Issuer, "claims " + tc.shape.claimsYAML(), ep.TokenURL} {
				if !strings.Contains(banner.String(), want) {
					t.Errorf("banner lacks %q:\n%s", want, banner)
				}
			}
			resp, err := http.PostForm(ep.TokenURL, url.Values{
				"grant_type": {"client_credentials"}, "client_id": {ServiceClientID}, "client_secret": {ServiceClientSecret},
			})
			if err != nil {
				t.Fatal(err)
			}
			var tok struct {
				AccessToken string `json:"access_token"`
			}
			decode(t, resp, http.StatusOK, &tok)
			user, err := UserToken(t.Context(), ep.Provider, ep.Proxy+"/auth/callback", DemoUser)
			if err != nil {
				t.Fatal(err)
			}
			for name, token := range map[string]string{"service": tok.AccessToken, "alice": user} {
				c := claimsOf(t, token)
				for _, k := range tc.claims {
					if _, ok := c[k]; !ok {
						t.Errorf("%s token lacks %s: %v", name, k, c)
					}
				}
				for _, k := range tc.absent {
					if _, ok := c[k]; ok {
						t.Errorf("%s token has %s, not of this shape: %v", name, k, c)
					}
				}
				req, _ := http.NewRequest("POST", ep.Proxy+"/shorten", bytes.NewReader([]byte(`{"url":"https://example.com/`+name+`"}`)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				decode(t, resp, http.StatusCreated, &struct{}{})
			}
			req, _ := http.NewRequest("GET", ep.Proxy+"/links", nil)
			req.Header.Set("Authorization", "Bearer "+user)
			resp, err = http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var list struct {
				User struct{ Name string } `json:"user"`
			}
			decode(t, resp, http.StatusOK, &list)
			if list.User.Name != tc.username {
				t.Errorf("the shortener greets %q, want %q", list.User.Name, tc.username)
			}
			seen.check(t, ep, tok.AccessToken, user)
			checkShortenerRefusesForgeries(t, ep, user)
		})
	}
}

func TestShapeFlag(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"--shape", "okta"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "entra") {
		t.Errorf("--shape okta: exit %d, stderr %q", code, errOut.String())
	}
	out.Reset()
	if code := run([]string{"--help"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "-shape") {
		t.Errorf("--help: exit %d, %s", code, out.String())
	}
}
