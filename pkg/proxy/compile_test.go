package proxy

import (
	"errors"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

func TestCompileThenNewCompiled(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	s := testConfig(idpSrv, up.URL)
	c, err := Compile(s.Config, s.IDP)
	if err != nil {
		t.Fatal(err)
	}
	table := c.Table()
	if !strings.Contains(table, "POST /shorten") {
		t.Fatalf("the rule table lacks a rule:\n%s", table)
	}
	plugin, err := idp.New(t.Context(), s.IDP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plugin.Close() })
	p, err := NewCompiled(plugin, c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Table() != table {
		t.Errorf("the proxy's table differs from the compiled one")
	}
	if _, err := NewCompiled(plugin, c, Options{}); err == nil {
		t.Error("a Compiled served a second proxy")
	}

	// Rules compiled against other excluded paths do not fit the plugin.
	other := s.IDP
	other.ExcludedPaths = []string{"/metrics"}
	c2, err := Compile(s.Config, other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewCompiled(plugin, c2, Options{}); err == nil || !strings.Contains(err.Error(), "ExcludedPaths") {
		t.Errorf("a plugin of another configuration: %v", err)
	}
}

func TestConfigErrorsNameTheirKeys(t *testing.T) {
	idpSrv := newProvider(t)
	s := testConfig(idpSrv, "ftp://x")
	s.Headers.User = "X-Same"
	s.Headers.Email = "x-same"
	_, err := Compile(s.Config, s.IDP)
	got := map[string]bool{}
	var walk func(error)
	walk = func(err error) {
		var ke *FieldError
		if errors.As(err, &ke) {
			got[ke.Field] = true
			for _, k := range ke.Also {
				got[k] = true
			}
		}
		if u, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range u.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	for _, k := range []string{"Upstream.URL", "Headers.Email", "Headers.User"} {
		if !got[k] {
			t.Errorf("no *FieldError for %s in %v (found %v)", k, err, got)
		}
	}
}
