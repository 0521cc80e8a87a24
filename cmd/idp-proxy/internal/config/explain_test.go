package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// Without a file, the errors say first that no file was given, and each
// required key how else to set it.
func TestNoFileSaysSo(t *testing.T) {
	f, err := Load("", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Check()
	if err == nil {
		t.Fatal("accepted without a file")
	}
	lines := strings.Split(err.Error(), "\n")
	if !strings.Contains(lines[0], "no configuration file was given") || !strings.Contains(lines[0], "--config") || !strings.Contains(lines[0], EnvConfigFile) {
		t.Errorf("first line %q does not say that no file was given", lines[0])
	}
	for _, want := range []string{"IDP_PROXY_IDP_CLIENT_ID", "--upstream or IDP_PROXY_UPSTREAM_URL", "IDP_PROXY_IDP_REALM"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
	// A file that only lacks a key does not get that line.
	f, err = Load(writeFile(t, "c.yaml", "upstream: {url: http://127.0.0.1:8000}\nidp: {server_url: http://127.0.0.1:8080, client_id: c}\n"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = f.Check(); err == nil || strings.Contains(err.Error(), "no configuration file") {
		t.Errorf("a file without realm: %v", err)
	}
}

// Every problem idp.Config finds in the idp section names its key path,
// and a missing one the file and the variable that set it; the errors
// still match idp.ErrConfig.
func TestIDPProblemsNameTheirKeys(t *testing.T) {
	path := writeFile(t, "c.yaml", "upstream: {url: http://127.0.0.1:8000}\nidp: {server_url: http://127.0.0.1:8080, client_id: c}\n")
	f, err := Load(path, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Check()
	var ke *KeyError
	if err == nil || !errors.As(err, &ke) || ke.Key != "idp.realm" || !errors.Is(err, idp.ErrConfig) {
		t.Fatalf("err = %v, want a KeyError for idp.realm that is an idp.ErrConfig", err)
	}
	for _, want := range []string{"idp.realm: realm is required", path, "IDP_PROXY_IDP_REALM"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	for _, tc := range []struct {
		mutate func(*File)
		key    string
	}{
		{func(c *File) { c.IDP.ClientID = "" }, "idp.client_id"},
		{func(c *File) { c.IDP.Realm = "a/b" }, "idp.realm"},
		{func(c *File) { c.IDP.ServerURL = "ftp://x" }, "idp.server_url"},
		{func(c *File) { c.IDP.IncludeRoutes = true }, "idp.redirect_uri"},
		{func(c *File) { c.IDP.IncludeRoutes, c.IDP.RedirectURI = true, "http://127.0.0.1:4180/auth/callback" }, "idp.session_secret"},
		{func(c *File) { c.IDP.Algorithms = []string{"HS256"} }, "idp.algorithms"},
		{func(c *File) { c.IDP.ExcludedPaths = []string{"x"} }, "idp.excluded_paths"},
	} {
		c := validConfig()
		tc.mutate(&c)
		_, err := c.Check()
		found := false
		for _, e := range flatten(err) {
			if errors.As(e, &ke) && ke.Key == tc.key && strings.Contains(e.Error(), tc.key) {
				found = true
			}
		}
		if !found {
			t.Errorf("want a problem of %s naming it, got %v", tc.key, err)
		}
	}
}
