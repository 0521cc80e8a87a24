package cli

import (
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/cmd/idp-proxy/internal/config"
)

// serve without a file says that none was given, before the keys it
// misses; the flags the errors suggest exist.
func TestServeWithoutConfigSaysNoFile(t *testing.T) {
	_, _, err := run(t, deps{}, "serve")
	if err == nil || !strings.HasPrefix(err.Error(), "proxy: no configuration file was given") {
		t.Fatalf("serve without a file: %v", err)
	}
	root := newRootCmd(deps{})
	for _, key := range []string{"listen", "upstream.url", "metrics_listen"} {
		flag := config.KeyFlag(key)
		if flag == "" || root.PersistentFlags().Lookup(strings.TrimPrefix(flag, "--")) == nil {
			t.Errorf("key %s: the errors suggest the flag %q, which idp-proxy does not have", key, flag)
		}
	}
}
