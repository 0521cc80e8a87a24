package deploy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// realmExport is the part of Keycloak's realm representation we rely on.
type realmExport struct {
	Realm   string `json:"realm"`
	Enabled bool   `json:"enabled"`
	Roles   struct {
		Realm  []struct{ Name string } `json:"realm"`
		Client map[string][]struct {
			Name string
		} `json:"client"`
	} `json:"roles"`
	Clients []realmClient `json:"clients"`
	Users   []struct {
		Username               string              `json:"username"`
		Enabled                bool                `json:"enabled"`
		ServiceAccountClientID string              `json:"serviceAccountClientId"`
		RealmRoles             []string            `json:"realmRoles"`
		ClientRoles            map[string][]string `json:"clientRoles"`
		Credentials            []struct {
			Type      string `json:"type"`
			Value     string `json:"value"`
			Temporary bool   `json:"temporary"`
		} `json:"credentials"`
	} `json:"users"`
}

type realmClient struct {
	ClientID                  string            `json:"clientId"`
	FrontchannelLogout        bool              `json:"frontchannelLogout"`
	Enabled                   bool              `json:"enabled"`
	PublicClient              bool              `json:"publicClient"`
	Secret                    string            `json:"secret"`
	StandardFlowEnabled       bool              `json:"standardFlowEnabled"`
	ServiceAccountsEnabled    bool              `json:"serviceAccountsEnabled"`
	DirectAccessGrantsEnabled bool              `json:"directAccessGrantsEnabled"`
	ImplicitFlowEnabled       bool              `json:"implicitFlowEnabled"`
	RedirectURIs              []string          `json:"redirectUris"`
	Attributes                map[string]string `json:"attributes"`
	ProtocolMappers           []struct {
		ProtocolMapper string            `json:"protocolMapper"`
		Config         map[string]string `json:"config"`
	} `json:"protocolMappers"`
}

// audiences are the clients an audience mapper adds to the aud claim of
// the access tokens this client obtains.
func (c realmClient) audiences() []string {
	var out []string
	for _, m := range c.ProtocolMappers {
		if m.ProtocolMapper == "oidc-audience-mapper" && m.Config["access.token.claim"] == "true" {
			out = append(out, m.Config["included.client.audience"])
		}
	}
	return out
}

func loadRealm(t *testing.T) realmExport {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("keycloak", "realm-demo.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r realmExport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r realmExport) client(t *testing.T, id string) realmClient {
	t.Helper()
	for _, c := range r.Clients {
		if c.ClientID == id {
			return c
		}
	}
	t.Fatalf("realm %s has no client %s", r.Realm, id)
	return realmClient{}
}

func (r realmExport) realmRoles() []string {
	var out []string
	for _, role := range r.Roles.Realm {
		out = append(out, role.Name)
	}
	return out
}

func (r realmExport) clientRoles(client string) []string {
	var out []string
	for _, role := range r.Roles.Client[client] {
		out = append(out, role.Name)
	}
	return out
}

// TestRealm checks the realm export against what the docs, the compose
// stack and the interop tests (test/interop/provider, the same realm on
// oidc-provider) assume.
func TestRealm(t *testing.T) {
	r := loadRealm(t)
	if r.Realm != "demo" || !r.Enabled {
		t.Fatalf("realm %q enabled=%v", r.Realm, r.Enabled)
	}
	web := r.client(t, "shortener")
	if !web.Enabled || web.PublicClient || web.Secret == "" || !web.StandardFlowEnabled ||
		web.ImplicitFlowEnabled || web.DirectAccessGrantsEnabled || web.ServiceAccountsEnabled {
		t.Errorf("client shortener must be a confidential authorization-code client only: %+v", web)
	}
	if web.Attributes["pkce.code.challenge.method"] != "S256" {
		t.Errorf("client shortener: PKCE S256 not enforced: %v", web.Attributes)
	}
	if !slices.Contains(web.RedirectURIs, "http://localhost:4180/auth/callback") {
		t.Errorf("client shortener redirect URIs %v", web.RedirectURIs)
	}
	svc := r.client(t, "svc-reporter")
	if !svc.Enabled || svc.PublicClient || svc.Secret == "" || !svc.ServiceAccountsEnabled ||
		svc.StandardFlowEnabled || svc.ImplicitFlowEnabled || svc.DirectAccessGrantsEnabled {
		t.Errorf("client svc-reporter must be a service account only: %+v", svc)
	}
	if !slices.Contains(r.clientRoles("shortener"), "editor") {
		t.Errorf("client role shortener/editor not defined: %v", r.Roles.Client)
	}

	realmRoles := r.realmRoles()
	users := map[string]int{}
	for i, u := range r.Users {
		users[u.Username] = i
		if !u.Enabled {
			t.Errorf("user %s disabled", u.Username)
		}
		for _, role := range u.RealmRoles {
			if !slices.Contains(realmRoles, role) {
				t.Errorf("user %s: realm role %s not defined", u.Username, role)
			}
		}
		for c, roles := range u.ClientRoles {
			for _, role := range roles {
				if !slices.Contains(r.clientRoles(c), role) {
					t.Errorf("user %s: client role %s/%s not defined", u.Username, c, role)
				}
			}
		}
	}
	// What the interop provider (test/interop/provider/server.mjs) and the
	// README promise: same users, passwords, secrets and roles.
	mjs, err := os.ReadFile(filepath.Join("..", "test", "interop", "provider", "server.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []realmClient{web, svc} {
		if want := fmt.Sprintf("client_id: '%s',\n    client_secret: '%s'", c.ClientID, c.Secret); !strings.Contains(string(mjs), want) {
			t.Errorf("the interop provider's client %s has another secret than %q", c.ClientID, c.Secret)
		}
	}
	for _, tc := range []struct {
		user, password string
		creator        bool
		editor         bool
	}{
		{"alice", "alice-password", true, true},
		{"bob", "bob-password", false, false},
		{"service-account-svc-reporter", "", true, false},
	} {
		i, ok := users[tc.user]
		if !ok {
			t.Errorf("no user %s", tc.user)
			continue
		}
		u := r.Users[i]
		if slices.Contains(u.RealmRoles, "creator") != tc.creator {
			t.Errorf("user %s: creator=%v, want %v", tc.user, !tc.creator, tc.creator)
		}
		if slices.Contains(u.ClientRoles["shortener"], "editor") != tc.editor {
			t.Errorf("user %s: shortener/editor=%v, want %v", tc.user, !tc.editor, tc.editor)
		}
		if tc.password == "" {
			if u.ServiceAccountClientID != "svc-reporter" || len(u.Credentials) != 0 {
				t.Errorf("user %s must be svc-reporter's service account without a password", tc.user)
			}
			continue
		}
		if len(u.Credentials) != 1 || u.Credentials[0].Type != "password" ||
			u.Credentials[0].Value != tc.password || u.Credentials[0].Temporary {
			t.Errorf("user %s: want the permanent password %q", tc.user, tc.password)
		}
		if !strings.Contains(string(mjs), fmt.Sprintf("password: '%s'", tc.password)) {
			t.Errorf("the interop provider has no user with password %q", tc.password)
		}
	}
}
