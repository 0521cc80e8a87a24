package cli

import (
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// TestCheckConfigCredentials: check-config refuses exchange and
// client_credentials without idp.client_secret, naming both keys, and
// accepts them with it.
func TestCheckConfigCredentials(t *testing.T) {
	idpSrv := idptest.NewServer(t)
	for _, mode := range []string{"exchange", "client_credentials"} {
		cfg := writeConfig(t, idpSrv, "http://127.0.0.1:8000", "")
		env := []string{"IDP_PROXY_UPSTREAM_CREDENTIAL=" + mode, "IDP_PROXY_UPSTREAM_AUDIENCE=orders-api"}
		_, _, err := run(t, deps{environ: env}, "check-config", cfg)
		if err == nil || !strings.Contains(err.Error(), "upstream.credential "+mode+" needs idp.client_secret") {
			t.Errorf("%s without a client secret: %v", mode, err)
		}
		out, _, err := run(t, deps{environ: append(env, "IDP_PROXY_IDP_CLIENT_SECRET=s3cret")}, "check-config", cfg)
		if err != nil || !strings.Contains(out, "configuration OK") {
			t.Errorf("%s with a client secret: %v\n%s", mode, err, out)
		}
	}
}
