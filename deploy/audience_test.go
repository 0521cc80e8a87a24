package deploy_test

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// deploy/README.md describes the audiences as the realm and the compose
// configuration set them: it named no audience mapper and accepted the
// service token through optional_audiences, while the realm maps
// "shortener" into aud and idp-proxy.yaml lists no optional audience.
func TestReadmeAudienceTextMatchesRealm(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(b)), " ") // line breaks as spaces
	var cfg struct {
		IDP struct {
			ClientID          string   `yaml:"client_id"`
			OptionalAudiences []string `yaml:"optional_audiences"`
		} `yaml:"idp"`
	}
	decodeYAML(t, "idp-proxy.yaml", &cfg)
	realm := loadRealm(t)
	for _, id := range []string{"shortener", "svc-reporter"} {
		mapped := slices.Contains(realm.client(t, id).audiences(), cfg.IDP.ClientID)
		if mapped && strings.Contains(readme, "No audience mapper") {
			t.Errorf("the realm's client %s maps %q into aud, and README.md says no audience mapper is needed", id, cfg.IDP.ClientID)
		}
		if !mapped && !slices.Contains(cfg.IDP.OptionalAudiences, id) {
			t.Errorf("idp-proxy.yaml would refuse %s's tokens: no audience mapper, not in optional_audiences", id)
		}
		listed := slices.Contains(cfg.IDP.OptionalAudiences, id)
		if claims := "`" + id + "` is in `optional_audiences`"; strings.Contains(readme, claims) != listed {
			t.Errorf("README.md says %q: %v; idp-proxy.yaml's optional_audiences %v", claims, !listed, cfg.IDP.OptionalAudiences)
		}
	}
	if len(cfg.IDP.OptionalAudiences) == 0 && !strings.Contains(readme, "`optional_audiences: []`") {
		t.Error("README.md does not say that idp-proxy.yaml lists no optional_audiences")
	}
}

// The browser sign-in of the compose stack needs the machine to resolve
// Keycloak's issuer host (KC_HOSTNAME): the top README's Deploy section,
// which a new user reads first, says how, as deploy/README.md does.
func TestTopReadmeNamesTheHostsEntry(t *testing.T) {
	var compose struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	decodeYAML(t, "docker-compose.yml", &compose)
	kc := compose.Services["keycloak"].Environment["KC_HOSTNAME"]
	host := strings.TrimPrefix(strings.TrimPrefix(kc, "http://"), "https://")
	host, _, _ = strings.Cut(host, ":")
	if host == "" {
		t.Fatal("docker-compose.yml: keycloak has no KC_HOSTNAME")
	}
	if host == "localhost" || host == "127.0.0.1" {
		return // resolvable anywhere
	}
	entry := "127.0.0.1 " + host
	for _, f := range []string{"../README.md", "README.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), entry) || !strings.Contains(string(b), "/etc/hosts") {
			t.Errorf("%s does not give the hosts entry %q that the compose stack's browser sign-in needs", f, entry)
		}
	}
}
