package cli

import (
	"strings"
	"testing"
)

// idp-proxy --help says what the proxy does today: any OpenID Connect
// provider, several issuers, many upstreams; not "a Keycloak-style realm
// ... one upstream".
func TestHelpDescribesAnyProviderAndManyUpstreams(t *testing.T) {
	out, _, err := run(t, deps{}, "--help")
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, stale := range []string{"Keycloak-style", "to one upstream with"} {
		if strings.Contains(flat, stale) {
			t.Errorf("--help still says %q:\n%s", stale, out)
		}
	}
	for _, want := range []string{"any OpenID Connect provider", "idp.issuers", "several issuers", "upstreams"} {
		if !strings.Contains(flat, want) {
			t.Errorf("--help does not say %q:\n%s", want, out)
		}
	}
}
