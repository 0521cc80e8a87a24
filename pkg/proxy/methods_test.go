package proxy

import (
	"errors"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

func compileRoutes(t *testing.T, extension []string, matches ...string) error {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Upstream.URL = "http://127.0.0.1:8000"
	cfg.ExtensionMethods = extension
	for _, m := range matches {
		cfg.Routes = append(cfg.Routes, RouteConfig{Match: m})
	}
	_, err := compile(cfg, idp.Config{ServerURL: "http://127.0.0.1:8080", Realm: "demo", ClientID: "c"}.WithDefaults())
	return err
}

// A rule on a method outside IANA's registry (a typo: GETT; a method of
// one's own: FETCH) is a load error naming the rule and
// extension_methods, unless extension_methods lists it.
func TestUnregisteredMethodsRefused(t *testing.T) {
	for _, m := range []string{"GETT /x", "FETCH /x", "POSTT /shorten", "GET-ALL /x"} {
		err := compileRoutes(t, nil, "GET /ok", m)
		var ke *FieldError
		if err == nil || !strings.Contains(err.Error(), "Routes[1]") || !strings.Contains(err.Error(), "ExtensionMethods") ||
			!errors.As(err, &ke) || ke.Field != "Routes" {
			t.Errorf("rule %q: err = %v, want a load error naming Routes[1] and ExtensionMethods", m, err)
		}
	}
	for _, m := range []string{"GET /x", "HEAD /x", "POST /x", "PUT /x", "PATCH /x", "DELETE /x", "OPTIONS /x",
		"PROPFIND /dav/", "MKCOL /dav/", "QUERY /search", "VERSION-CONTROL /v", "/any"} {
		if err := compileRoutes(t, nil, m); err != nil {
			t.Errorf("rule %q: %v", m, err)
		}
	}
	if err := compileRoutes(t, []string{"FETCH", "PURGE"}, "FETCH /x", "PURGE /cache/"); err != nil {
		t.Errorf("listed extension methods: %v", err)
	}
	for _, ext := range []string{"fetch", "FE TCH", "", "TRACE"} {
		if err := compileRoutes(t, []string{ext}); err == nil || !strings.Contains(err.Error(), "ExtensionMethods[0]") {
			t.Errorf("extension_methods [%q]: err = %v, want an error naming it", ext, err)
		}
	}
}
