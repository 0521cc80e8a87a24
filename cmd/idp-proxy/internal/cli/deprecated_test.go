package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// check-config accepts the former spelling idp.verified_cache_size: 0 and
// warns on stderr, naming the switch to write instead; the switch itself
// draws no warning.
func TestCheckConfigWarnsOfDeprecatedSpelling(t *testing.T) {
	for _, c := range []struct {
		key  string
		warn bool
	}{
		{"verified_cache_size: 0", true},
		{"verified_cache: false", false},
	} {
		path := filepath.Join(t.TempDir(), "idp-proxy.yaml")
		y := "upstream: {url: \"http://127.0.0.1:8000\"}\nidp: {server_url: \"http://127.0.0.1:8080\", realm: demo, client_id: shortener, " + c.key + "}\n"
		if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
		out, errOut, err := run(t, deps{}, "check-config", path)
		if err != nil || !strings.Contains(out, "configuration OK") {
			t.Fatalf("%s: check-config: %v\n%s", c.key, err, out)
		}
		if got := strings.Contains(errOut, "warning: idp.verified_cache_size: 0 is deprecated: write idp.verified_cache: false"); got != c.warn {
			t.Errorf("%s: warning on stderr %v, want %v:\n%s", c.key, got, c.warn, errOut)
		}
	}
}

// serve logs the former spelling as a warning when it starts.
func TestServeWarnsOfDeprecatedSpelling(t *testing.T) {
	idpSrv := idptest.NewServer(t)
	path := filepath.Join(t.TempDir(), "idp-proxy.yaml")
	y := fmt.Sprintf("listen: 127.0.0.1:0\nmetrics_listen: 127.0.0.1:0\nupstream: {url: \"http://127.0.0.1:1\"}\n"+
		"idp: {server_url: %q, realm: %s, client_id: shortener, verified_cache_size: 0}\nlog: {level: warn}\n", idpSrv.URL, idpSrv.Realm)
	if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServeUnready(t, path)
	if !strings.Contains(s.logs.String(), "deprecated configuration: idp.verified_cache_size: 0 is deprecated: write idp.verified_cache: false") {
		t.Errorf("no deprecation warning in the log:\n%s", s.logs.String())
	}
}
