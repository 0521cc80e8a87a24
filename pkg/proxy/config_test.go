package proxy

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

const examplePath = "../../config.example.yaml"

func TestExampleConfigIsValidAndComplete(t *testing.T) {
	c, err := Load(examplePath, LoadOptions{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if _, err := Check(c); err != nil {
		t.Fatalf("Check: %v", err)
	}
	// The example documents the defaults: loading it must give
	// DefaultConfig for every key the example does not deliberately set.
	want := DefaultConfig()
	want.Upstream.URL = "http://127.0.0.1:8000"
	want.IDP.ServerURL, want.IDP.Realm, want.IDP.ClientID = "http://127.0.0.1:8080", "demo", "shortener"
	want.IDP.OptionalAudiences = []string{"svc-reporter"}
	want.IDP.ExcludedPaths = []string{}
	got := c
	got.Routes = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("example differs from the defaults:\n got %+v\nwant %+v", got, want)
	}

	raw, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range knownKeys() {
		var cur any = doc
		for _, part := range strings.Split(k, ".") {
			m, ok := cur.(map[string]any)
			if !ok {
				cur = nil
				break
			}
			v, present := m[part]
			if !present {
				cur = nil
				break
			}
			if v == nil {
				v = "" // present with an empty value
			}
			cur = v
		}
		if cur == nil {
			t.Errorf("config.example.yaml does not document %s", k)
		}
	}
	// Every field of a rule appears in at least one example rule.
	routes, _ := doc["routes"].([]any)
	seen := map[string]bool{}
	for _, r := range routes {
		for k := range r.(map[string]any) {
			seen[k] = true
		}
	}
	rt := reflect.TypeFor[RouteConfig]()
	for i := range rt.NumField() {
		if tag := rt.Field(i).Tag.Get("yaml"); !seen[tag] {
			t.Errorf("no example rule shows routes[].%s", tag)
		}
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const minimalYAML = `
upstream: {url: "http://127.0.0.1:8000"}
idp: {server_url: "http://127.0.0.1:8080", realm: demo, client_id: shortener}
`

func TestLoadDefaults(t *testing.T) {
	c, err := Load(writeFile(t, "c.yaml", minimalYAML), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.Upstream.URL = "http://127.0.0.1:8000"
	want.IDP.ServerURL, want.IDP.Realm, want.IDP.ClientID = "http://127.0.0.1:8080", "demo", "shortener"
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got %+v\nwant %+v", c, want)
	}
}

func TestLoadEnvironmentAndOverrides(t *testing.T) {
	path := writeFile(t, "c.yaml", minimalYAML+"listen: 127.0.0.1:1111\n")
	env := []string{
		"PATH=/usr/bin",
		"IDP_PROXY_CONFIG=/ignored.yaml",
		"IDP_PROXY_IDP_CLIENT_SECRET=s3cret",
		"IDP_PROXY_UPSTREAM_TIMEOUT=5s",
		"IDP_PROXY_IDP_JWKS_CACHE_TTL=600",
		"IDP_PROXY_IDP_OPTIONAL_AUDIENCES=svc-a,svc-b",
		"IDP_PROXY_HEADERS_FORWARD_TOKEN=false",
		"IDP_PROXY_HEADERS_EMAIL=",
		"IDP_PROXY_LISTEN=127.0.0.1:2222",
		"IDP_PROXY_SERVER_MAX_BODY_BYTES=1024",
	}
	c, err := Load(path, LoadOptions{Env: env, Overrides: map[string]any{"listen": "127.0.0.1:3333"}})
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"client_secret", c.IDP.ClientSecret, "s3cret"},
		{"upstream.timeout", c.Upstream.Timeout, 5 * time.Second},
		{"jwks_cache_ttl (seconds)", c.IDP.JWKSCacheTTL, 10 * time.Minute},
		{"optional_audiences", c.IDP.OptionalAudiences, []string{"svc-a", "svc-b"}},
		{"forward_token", c.Headers.ForwardToken, false},
		{"headers.email disabled", c.Headers.Email, ""},
		{"listen: flag over env over file", c.Listen, "127.0.0.1:3333"},
		{"max_body_bytes", c.Server.MaxBodyBytes, int64(1024)},
		{"untouched default", c.Headers.User, DefaultUserHeader},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %#v, want %#v", ch.name, ch.got, ch.want)
		}
	}
	c, err = Load(path, LoadOptions{Env: env})
	if err != nil || c.Listen != "127.0.0.1:2222" {
		t.Errorf("env over file: listen = %q, %v", c.Listen, err)
	}
}

func TestLoadRejects(t *testing.T) {
	tests := []struct {
		name, yaml string
		env        []string
		want       string
	}{
		{"unknown top-level key", minimalYAML + "listne: 1\n", nil, "listne"},
		{"unknown idp key", minimalYAML + "headers: {usr: X-User}\n", nil, "usr"},
		{"unknown rule key", minimalYAML + "routes: [{match: GET /x, role: [a]}]\n", nil, "role"},
		{"unknown env variable", minimalYAML, []string{"IDP_PROXY_IDP_CLIENTSECRET=x"}, "IDP_PROXY_IDP_CLIENTSECRET"},
		{"routes from env", minimalYAML, []string{"IDP_PROXY_ROUTES=x"}, "IDP_PROXY_ROUTES"},
		{"bad duration", minimalYAML + "server: {read_timeout: soon}\n", nil, "soon"},
		{"bad duration from env", minimalYAML, []string{"IDP_PROXY_IDP_HTTP_TIMEOUT=10 parsecs"}, "10 parsecs"},
		{"bad boolean", minimalYAML + "headers: {forward_token: maybe}\n", nil, "forward_token"},
		{"bad integer", minimalYAML + "server: {max_header_bytes: lots}\n", nil, "max_header_bytes"},
		{"malformed yaml", "listen: [\n", nil, "c.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeFile(t, "c.yaml", tt.yaml), LoadOptions{Env: tt.env})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml"), LoadOptions{}); err == nil {
		t.Error("missing file: no error")
	}
}

func TestLoadKeepsClientIDCase(t *testing.T) {
	c, err := Load(writeFile(t, "c.yaml", minimalYAML+`
routes:
  - match: GET /x
    client_roles: {MyClient: [Editor]}
`), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Routes[0].ClientRoles; !reflect.DeepEqual(got, map[string][]string{"MyClient": {"Editor"}}) {
		t.Fatalf("client_roles = %v", got)
	}
}

func TestSecretsFromFiles(t *testing.T) {
	dir := t.TempDir()
	sec := filepath.Join(dir, "secret")
	sess := filepath.Join(dir, "session")
	if err := os.WriteFile(sec, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sess, []byte(strings.Repeat("k", 32)+"\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := validConfig()
	c.IDP.ClientSecretFile = sec
	c.IDP.SessionSecretFile = sess
	ic, err := c.PluginConfig()
	if err != nil {
		t.Fatal(err)
	}
	if ic.ClientSecret != "from-file" || string(ic.SessionSecret) != strings.Repeat("k", 32) {
		t.Fatalf("secrets = %q, %q", ic.ClientSecret, ic.SessionSecret)
	}
	c.IDP.ClientSecretFile = filepath.Join(dir, "nope")
	if _, err := Check(c); err == nil || !strings.Contains(err.Error(), "idp.client_secret_file") {
		t.Fatalf("missing secret file: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	_ = os.WriteFile(empty, []byte("\n"), 0o600)
	c.IDP.ClientSecretFile = empty
	if _, err := Check(c); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Fatalf("empty secret file: %v", err)
	}
}

// validConfig is a complete configuration for tests.
func validConfig() Config {
	c := DefaultConfig()
	c.Upstream.URL = "http://127.0.0.1:8000"
	c.IDP.ServerURL, c.IDP.Realm, c.IDP.ClientID = "http://127.0.0.1:8080", "demo", "shortener"
	return c
}

func TestCheckRejectsBadValues(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(c *Config)
		want   string
	}{
		{"no upstream", func(c *Config) { c.Upstream.URL = "" }, "upstream.url is required"},
		{"upstream scheme", func(c *Config) { c.Upstream.URL = "ftp://x" }, "upstream.url"},
		{"upstream query", func(c *Config) { c.Upstream.URL = "http://x/?a=1" }, "upstream.url"},
		{"negative timeout", func(c *Config) { c.Upstream.Timeout = -time.Second }, "upstream.timeout"},
		{"listen", func(c *Config) { c.Listen = "4180" }, "listen"},
		{"metrics on listen", func(c *Config) { c.MetricsListen = c.Listen }, "metrics_listen must differ"},
		{"default policy", func(c *Config) { c.DefaultPolicy = "allow" }, "default_policy"},
		{"token location", func(c *Config) { c.IDP.TokenLocation = "query" }, "idp.token_location"},
		{"two secrets", func(c *Config) { c.IDP.ClientSecret, c.IDP.ClientSecretFile = "a", "b" }, "exclusive"},
		{"server url", func(c *Config) { c.IDP.ServerURL = "" }, "server_url is required"},
		{"realm", func(c *Config) { c.IDP.Realm = "" }, "realm is required"},
		{"client id", func(c *Config) { c.IDP.ClientID = "" }, "client_id is required"},
		{"hs256", func(c *Config) { c.IDP.Algorithms = []string{"HS256"} }, "symmetric"},
		{"excluded path", func(c *Config) { c.IDP.ExcludedPaths = []string{"health"} }, "idp.excluded_paths"},
		{"excluded dot path", func(c *Config) { c.IDP.ExcludedPaths = []string{"/a/../b"} }, "idp.excluded_paths"},
		{"header name", func(c *Config) { c.Headers.User = "X User" }, "headers.user"},
		{"reserved header", func(c *Config) { c.Headers.Email = "Authorization" }, "reserved"},
		{"duplicate header", func(c *Config) { c.Headers.Email = "x_auth_request_user" }, "same header"},
		{"tls half", func(c *Config) { c.TLS.CertFile = "c.pem" }, "tls.cert_file"},
		{"log format", func(c *Config) { c.Log.Format = "xml" }, "log.format"},
		{"log level", func(c *Config) { c.Log.Level = "loud" }, "log.level"},
		{"negative server timeout", func(c *Config) { c.Server.IdleTimeout = -1 }, "server.idle_timeout"},
		{"include_routes without redirect_uri", func(c *Config) {
			c.IDP.IncludeRoutes, c.IDP.SessionSecret = true, strings.Repeat("s", 32)
		}, "redirect_uri is required"},
		{"include_routes without session secret", func(c *Config) {
			c.IDP.IncludeRoutes, c.IDP.RedirectURI = true, "http://127.0.0.1:4180/auth/callback"
		}, "session secret"},
		{"include_routes at the root", func(c *Config) {
			c.IDP.IncludeRoutes, c.IDP.AuthPrefix = true, "/"
		}, "auth_prefix must not be"},
		{"rule without match", func(c *Config) { c.Routes = []RouteConfig{{}} }, "routes[0]: match is required"},
		{"bad pattern", func(c *Config) { c.Routes = []RouteConfig{{Match: "GET  x"}} }, `routes[0] "GET  x": invalid pattern`},
		{"public with roles", func(c *Config) { c.Routes = []RouteConfig{{Match: "/x", Public: true, Roles: []string{"a"}}} }, "public excludes"},
		{"bad strategy", func(c *Config) { c.Routes = []RouteConfig{{Match: "/x", Roles: []string{"a"}, Strategy: "most"}} }, "strategy"},
		{"empty role", func(c *Config) { c.Routes = []RouteConfig{{Match: "/x", Roles: []string{""}}} }, "empty name"},
		{"client without roles", func(c *Config) { c.Routes = []RouteConfig{{Match: "/x", ClientRoles: map[string][]string{"c": nil}}} }, "no roles"},
		{"conflict", func(c *Config) {
			c.Routes = []RouteConfig{{Match: "GET /{code}", Public: true}, {Match: "/health", Public: true}}
		}, `routes[1] "/health" conflicts with routes[0] "GET /{code}"`},
		{"duplicate", func(c *Config) {
			c.Routes = []RouteConfig{{Match: "POST /shorten"}, {Match: "GET /x"}, {Match: "POST /shorten", Roles: []string{"a"}}}
		}, `routes[2] "POST /shorten" conflicts with routes[0] "POST /shorten"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.mutate(&c)
			_, err := Check(c)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant one containing %q", err, tt.want)
			}
		})
	}
}

func TestKnownKeysCoverConfig(t *testing.T) {
	keys := knownKeys()
	for _, k := range []string{"listen", "idp.client_secret", "headers.trust_forwarded", "server.max_body_bytes", "tls.key_file", "log.level"} {
		if !slices.Contains(keys, k) {
			t.Errorf("knownKeys lacks %s", k)
		}
	}
	if EnvName("idp.client_secret") != "IDP_PROXY_IDP_CLIENT_SECRET" {
		t.Errorf("EnvName = %s", EnvName("idp.client_secret"))
	}
}

func TestCheckReportsEveryProblem(t *testing.T) {
	c := validConfig()
	c.DefaultPolicy = "allow"
	c.IDP.ServerURL = ""
	c.Headers.Roles = "Bad Header"
	c.Routes = []RouteConfig{{Match: "/x", Strategy: "any"}}
	_, err := Check(c)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"default_policy", "server_url is required", "headers.roles", "strategy without roles"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
