package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/proxy"
)

func TestDefaultIsThePackagesDefaults(t *testing.T) {
	d := Default()
	id := idp.Config{Session: &idp.SessionConfig{}}.WithDefaults()
	if d.IDP.Leeway != idp.DefaultLeeway || d.IDP.VerifiedCacheSize != idp.DefaultVerifiedCacheSize ||
		d.IDP.JWKSCacheTTL != idp.DefaultJWKSCacheTTL || d.IDP.HTTPTimeout != idp.DefaultHTTPTimeout ||
		d.IDP.CookieName != idp.DefaultCookieName || d.IDP.AuthPrefix != idp.DefaultAuthPrefix ||
		d.IDP.TokenLocation != "header" || strings.Join(d.IDP.Algorithms, ",") != strings.Join(id.Algorithms, ",") {
		t.Errorf("idp section %+v, pkg/idp's defaults %+v", d.IDP, id)
	}
	if d.Session.CookieName != idp.DefaultSessionCookie || d.Session.MaxAge != idp.DefaultSessionMaxAge ||
		d.Session.RefreshMargin != idp.DefaultSessionRefreshMargin {
		t.Errorf("session section %+v", d.Session)
	}
	pd := proxy.DefaultConfig()
	if !reflect.DeepEqual(d.Upstream, pd.Upstream) || !reflect.DeepEqual(d.Headers, pd.Headers) || d.DefaultPolicy != pd.DefaultPolicy || d.Server.MaxBodyBytes != pd.MaxBodyBytes {
		t.Errorf("proxy sections differ from proxy.DefaultConfig: %+v", d)
	}
}

// TestZeroInTheFile: an absent key takes the default; a written zero of
// idp.leeway means none, and of idp.verified_cache_size (the former
// spelling of idp.verified_cache: false) no cache, both reaching pkg/idp
// as its switches (NoLeeway, DisableVerifiedCache), the second with a
// deprecation.
// A zero that selects the default is the default in what Load returns, so
// that serve uses what Compile checked.
func TestLoadAppliesDefaultsOfZero(t *testing.T) {
	f, err := Load(writeFile(t, "c.yaml", "listen: \"\"\nserver: {read_timeout: 0}\n"+minimalYAML), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Listen != DefaultListen || f.Server.ReadTimeout != Default().Server.ReadTimeout {
		t.Fatalf("listen %q, read_timeout %s: want the defaults %q, %s", f.Listen, f.Server.ReadTimeout, DefaultListen, Default().Server.ReadTimeout)
	}
}

func TestZeroInTheFile(t *testing.T) {
	var deprecated []string
	compile := func(yaml string) idp.Config {
		t.Helper()
		f, err := Load(writeFile(t, "c.yaml", yaml), LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := Compile(f, CompileOptions{NoSecrets: true})
		if err != nil {
			t.Fatal(err)
		}
		deprecated = c.Deprecated
		return c.IDP.WithDefaults()
	}
	const head = "upstream: {url: \"http://127.0.0.1:8000\"}\nidp: {server_url: \"http://127.0.0.1:8080\", realm: demo, client_id: shortener, "
	ic := compile(minimalYAML)
	if ic.Leeway != idp.DefaultLeeway || ic.NoLeeway || ic.VerifiedCacheSize != idp.DefaultVerifiedCacheSize || ic.DisableVerifiedCache || deprecated != nil {
		t.Errorf("absent: leeway %s (none %v), cache %d (off %v), deprecated %q; want the defaults", ic.Leeway, ic.NoLeeway, ic.VerifiedCacheSize, ic.DisableVerifiedCache, deprecated)
	}
	ic = compile(head + "leeway: 0, verified_cache_size: 0}\n")
	if !ic.NoLeeway || !ic.DisableVerifiedCache || ic.Leeway < 0 || ic.VerifiedCacheSize < 0 {
		t.Errorf("zero: leeway %s (none %v), cache %d (off %v); want the switches, no negative value", ic.Leeway, ic.NoLeeway, ic.VerifiedCacheSize, ic.DisableVerifiedCache)
	}
	if len(deprecated) != 1 || !strings.Contains(deprecated[0], "idp.verified_cache: false") {
		t.Errorf("verified_cache_size: 0: deprecated = %q, want one naming idp.verified_cache: false", deprecated)
	}
	ic = compile(head + "verified_cache: false}\n")
	if !ic.DisableVerifiedCache || ic.NoLeeway || deprecated != nil {
		t.Errorf("verified_cache: false: cache off %v, no leeway %v, deprecated %q; want off, the default leeway, no deprecation", ic.DisableVerifiedCache, ic.NoLeeway, deprecated)
	}
	ic = compile(head + "leeway: 3s, verified_cache_size: 7}\n")
	if ic.Leeway != 3*time.Second || ic.NoLeeway || ic.VerifiedCacheSize != 7 || ic.DisableVerifiedCache {
		t.Errorf("given: leeway %s, cache %d", ic.Leeway, ic.VerifiedCacheSize)
	}
}

func TestCompile(t *testing.T) {
	c := validConfig()
	c.IDP.ClientSecret = "s3cret"
	c.Routes = []proxy.RouteConfig{{Match: "GET /health", Public: true}}
	got, err := Compile(c, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	table, err := c.Check()
	if err != nil || got.Proxy.Table() != table {
		t.Errorf("Compile's table differs from Check's (%v)", err)
	}
	if got.IDP.ClientSecret != "s3cret" || got.IDP.ServerURL != c.IDP.ServerURL || got.File.Listen != c.Listen {
		t.Errorf("Compiled = %+v", got)
	}
}

func TestCheckErrorsAreKeyErrors(t *testing.T) {
	c := validConfig()
	c.Listen = "nowhere"
	c.Upstream.URL = "ftp://x"
	_, err := Compile(c, CompileOptions{})
	named := map[string]bool{}
	errorKeys(err, named)
	for _, k := range []string{"listen", "upstream.url"} {
		if !named[k] {
			t.Errorf("no *KeyError for %s in %v", k, err)
		}
	}
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Key == "" {
		t.Errorf("errors.As finds no *KeyError in %v", err)
	}
}

// The bounds of a hanging provider's waits reach pkg/idp: absent, its
// defaults; given, as written.
func TestProviderWaitBounds(t *testing.T) {
	d := Default()
	if d.IDP.UnknownKIDWait != idp.DefaultUnknownKIDWait || d.Session.RefreshWait != idp.DefaultSessionRefreshWait ||
		d.IDP.FirstKeysWait != idp.DefaultFirstKeysWait {
		t.Fatalf("defaults: unknown_kid_wait %s, refresh_wait %s, first_keys_wait %s", d.IDP.UnknownKIDWait, d.Session.RefreshWait, d.IDP.FirstKeysWait)
	}
	f, err := Load(writeFile(t, "c.yaml", `upstream: {url: "http://127.0.0.1:8000"}
idp: {server_url: "http://127.0.0.1:8080", realm: demo, client_id: shortener, unknown_kid_wait: 2s, first_keys_wait: 7s,
  include_routes: true, redirect_uri: "http://127.0.0.1:4180/auth/callback", session_secret: "a session secret of at least 32 bytes"}
session: {enabled: true, refresh_wait: 3s}
`), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(f, CompileOptions{NoSecrets: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.IDP.UnknownKIDWait != 2*time.Second || c.IDP.Session == nil || c.IDP.Session.RefreshWait != 3*time.Second ||
		c.IDP.FirstKeysWait != 7*time.Second {
		t.Fatalf("unknown_kid_wait %s, first_keys_wait %s, session %+v", c.IDP.UnknownKIDWait, c.IDP.FirstKeysWait, c.IDP.Session)
	}
}
