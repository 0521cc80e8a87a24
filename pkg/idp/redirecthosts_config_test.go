package idp_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// Config.Validate reports every bad allowed_redirect_hosts entry (the
// entries' own checks are authflow's TestCompileRedirectHostsRefuses).
func TestCompileRedirectHostsRefusesInConfig(t *testing.T) {
	err := idp.Config{ClientID: "c", IssuerURL: "https://issuer.example", AllowedRedirectHosts: []string{"*.com", "a.example.com."}}.Validate()
	if !errors.Is(err, idp.ErrConfig) || !strings.Contains(err.Error(), `"*.com"`) || !strings.Contains(err.Error(), `"a.example.com."`) {
		t.Errorf("Validate: %v; want both entries reported", err)
	}
}
