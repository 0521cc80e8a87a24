package config

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/idp-proxy/idp-proxy/pkg/proxy"
)

const examplePath = "../../../../config.example.yaml"

var update = flag.Bool("update", false, "rewrite the golden files")

func TestExampleConfigIsValidAndComplete(t *testing.T) {
	c, err := Load(examplePath, LoadOptions{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if _, err := c.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	// The example documents the defaults: loading it must give
	// DefaultConfig for every key the example does not deliberately set.
	want := Default()
	want.Upstream.URL = "http://127.0.0.1:8000"
	want.IDP.ServerURL, want.IDP.Realm, want.IDP.ClientID = "http://127.0.0.1:8080", "demo", "shortener"
	want.IDP.OptionalAudiences = []string{"svc-reporter"}
	want.IDP.ExcludedPaths = []string{}
	want.IDP.AllowedRedirectHosts = []string{}
	want.Headers.Claims = map[string]string{"X-Auth-Request-Groups": "groups", "X-Auth-Request-Acr": "acr"}
	want.Upstreams = []proxy.UpstreamRoute{}
	want.Upstream.Scopes = []string{}
	want.IDP.Issuers = []Issuer{}
	got := c
	got.Routes = nil
	got.source = ""             // where it was read, for the errors
	got.doc, got.path = nil, "" // the parsed file, for line numbers
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
	rt := reflect.TypeFor[proxy.RouteConfig]()
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
	want := Default()
	want.Upstream.URL = "http://127.0.0.1:8000"
	want.IDP.ServerURL, want.IDP.Realm, want.IDP.ClientID = "http://127.0.0.1:8080", "demo", "shortener"
	c.source = ""           // where it was read, for the errors
	c.doc, c.path = nil, "" // the parsed file, for line numbers
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
		"IDP_PROXY_UPSTREAM_IDLE_TIMEOUT=2s",
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
		{"upstream.idle_timeout", c.Upstream.IdleTimeout, 2 * time.Second},
		{"jwks_cache_ttl (seconds)", c.IDP.JWKSCacheTTL, 10 * time.Minute},
		{"optional_audiences", c.IDP.OptionalAudiences, []string{"svc-a", "svc-b"}},
		{"forward_token", c.Headers.ForwardToken, false},
		{"headers.email disabled", c.Headers.Email, ""},
		{"listen: flag over env over file", c.Listen, "127.0.0.1:3333"},
		{"max_body_bytes", c.Server.MaxBodyBytes, int64(1024)},
		{"untouched default", c.Headers.User, proxy.DefaultUserHeader},
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

	// A value that loads but does not check names its variable when it
	// came from the environment, and only then.
	bad := []string{"IDP_PROXY_LISTEN=127.0.0.1:99999", "IDP_PROXY_IDP_LEEWAY=-5s"}
	c, err = Load(path, LoadOptions{Env: bad})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Check()
	for _, want := range []string{"IDP_PROXY_LISTEN", "IDP_PROXY_IDP_LEEWAY"} {
		if err == nil || !strings.Contains(err.Error(), "environment variable "+want) {
			t.Errorf("check error %v does not name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "IDP_PROXY_METRICS_LISTEN") {
		t.Errorf("check error names a variable that was not set: %v", err)
	}
	c, err = Load(path, LoadOptions{Env: bad[:1], Overrides: map[string]any{"listen": "127.0.0.1:99998"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Check(); err == nil || strings.Contains(err.Error(), "IDP_PROXY_LISTEN") {
		t.Errorf("a flag over the variable: the variable is blamed: %v", err)
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
	if _, err := c.Check(); err == nil || !strings.Contains(err.Error(), "idp.client_secret_file") {
		t.Fatalf("missing secret file: %v", err)
	}
	// The unreadable file is the one problem: the rest of the idp section
	// is still checked as written, not as an empty section.
	c.IDP.SessionSecretFile = filepath.Join(dir, "nope-either")
	_, err = c.Check()
	var ke *KeyError
	if err == nil || !errors.As(err, &ke) || strings.Contains(err.Error(), "required") ||
		strings.Count(err.Error(), "\n") != 1 || !strings.Contains(err.Error(), "idp.session_secret_file") {
		t.Fatalf("two missing secret files: want exactly their two errors, got:\n%v", err)
	}
	c.IDP.SessionSecretFile = sess
	empty := filepath.Join(dir, "empty")
	_ = os.WriteFile(empty, []byte("\n"), 0o600)
	c.IDP.ClientSecretFile = empty
	if _, err := c.Check(); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Fatalf("empty secret file: %v", err)
	}
}

// validConfig is a complete configuration for tests.
func validConfig() File {
	c := Default()
	c.Upstream.URL = "http://127.0.0.1:8000"
	c.IDP.ServerURL, c.IDP.Realm, c.IDP.ClientID = "http://127.0.0.1:8080", "demo", "shortener"
	return c
}

func TestCheckRejectsBadValues(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(c *File)
		want   string
	}{
		{"no upstream", func(c *File) { c.Upstream.URL = "" }, "upstream.url is required"},
		{"upstream scheme", func(c *File) { c.Upstream.URL = "ftp://x" }, "upstream.url"},
		{"upstream query", func(c *File) { c.Upstream.URL = "http://x/?a=1" }, "upstream.url"},
		{"negative timeout", func(c *File) { c.Upstream.Timeout = -time.Second }, "upstream.timeout"},
		{"negative idle timeout", func(c *File) { c.Upstream.IdleTimeout = -time.Second }, "upstream.idle_timeout"},
		{"listen", func(c *File) { c.Listen = "4180" }, "listen"},
		{"metrics on listen", func(c *File) { c.MetricsListen = c.Listen }, "metrics_listen must differ"},
		{"default policy", func(c *File) { c.DefaultPolicy = "allow" }, "default_policy"},
		{"unregistered method", func(c *File) { c.Routes = []proxy.RouteConfig{{Match: "GETT /x"}} }, "method GETT is not a registered HTTP method"},
		{"lower-case extension method", func(c *File) { c.ExtensionMethods = []string{"fetch"} }, "extension_methods[0]"},
		{"token location", func(c *File) { c.IDP.TokenLocation = "query" }, "idp.token_location"},
		{"session store", func(c *File) { c.Session.Enabled, c.Session.Store = true, "memcached" }, "session.store"},
		{"forward_auth without a way in", func(c *File) { c.ForwardAuth.Enabled = true }, "forward_auth: set listen"},
		{"forward_auth listen", func(c *File) { c.ForwardAuth.Enabled, c.ForwardAuth.Listen = true, "4181" }, "forward_auth.listen"},
		{"forward_auth cidr", func(c *File) {
			c.ForwardAuth.Enabled, c.ForwardAuth.TrustedCIDRs = true, []string{"10.0.0.0/40"}
		}, "forward_auth.trusted_cidrs"},
		{"session redis without url", func(c *File) { c.Session.Enabled, c.Session.Store = true, "redis" }, "session.redis_url is required"},
		{"session redis bad url", func(c *File) {
			c.Session.Enabled, c.Session.Store, c.Session.RedisURL = true, "redis", "http://x"
		}, "session.redis_url"},
		{"session without include_routes", func(c *File) { c.Session.Enabled = true }, "sessions need include_routes"},
		{"session max age", func(c *File) {
			c.Session.Enabled, c.Session.MaxAge = true, time.Second
		}, "session max age"},
		{"two secrets", func(c *File) { c.IDP.ClientSecret, c.IDP.ClientSecretFile = "a", "b" }, "exclusive"},
		{"server url", func(c *File) { c.IDP.ServerURL = "" }, "server_url is required"},
		{"realm", func(c *File) { c.IDP.Realm = "" }, "realm is required"},
		{"client id", func(c *File) { c.IDP.ClientID = "" }, "client_id is required"},
		{"hs256", func(c *File) { c.IDP.Algorithms = []string{"HS256"} }, "symmetric"},
		{"excluded path", func(c *File) { c.IDP.ExcludedPaths = []string{"health"} }, "idp.excluded_paths"},
		{"excluded dot path", func(c *File) { c.IDP.ExcludedPaths = []string{"/a/../b"} }, "idp.excluded_paths"},
		{"header name", func(c *File) { c.Headers.User = "X User" }, "headers.user"},
		{"reserved header", func(c *File) { c.Headers.Email = "Authorization" }, "reserved"},
		{"duplicate header", func(c *File) { c.Headers.Email = "x_auth_request_user" }, "same header"},
		{"tls half", func(c *File) { c.TLS.CertFile = "c.pem" }, "tls.cert_file"},
		{"log format", func(c *File) { c.Log.Format = "xml" }, "log.format"},
		{"tls min version", func(c *File) { c.TLS.MinVersion = "1.0" }, "tls.min_version"},
		{"negative drain delay", func(c *File) { c.Server.DrainDelay = -time.Second }, "server.drain_delay"},
		{"half a client certificate", func(c *File) { c.Upstream.ClientKeyFile = "k.pem" }, "upstream.client_cert_file and upstream.client_key_file"},
		{"log level", func(c *File) { c.Log.Level = "loud" }, "log.level"},
		{"negative server timeout", func(c *File) { c.Server.IdleTimeout = -1 }, "server.idle_timeout"},
		{"include_routes without redirect_uri", func(c *File) {
			c.IDP.IncludeRoutes, c.IDP.SessionSecret = true, strings.Repeat("s", 32)
		}, "redirect_uri is required"},
		{"include_routes without session secret", func(c *File) {
			c.IDP.IncludeRoutes, c.IDP.RedirectURI = true, "http://127.0.0.1:4180/auth/callback"
		}, "session secret"},
		{"include_routes at the root", func(c *File) {
			c.IDP.IncludeRoutes, c.IDP.AuthPrefix = true, "/"
		}, "auth_prefix must not be"},
		{"allowed redirect host over a public suffix", func(c *File) {
			c.IDP.AllowedRedirectHosts = []string{"*.co.uk"}
		}, `allowed_redirect_hosts: "*.co.uk": "co.uk" is a public suffix`},
		{"allowed redirect host that never matches", func(c *File) {
			c.IDP.AllowedRedirectHosts = []string{"wiki.example.com."}
		}, `allowed_redirect_hosts: "wiki.example.com.": a trailing dot never matches`},
		{"cookie domain over http", func(c *File) {
			c.IDP.IncludeRoutes, c.IDP.SessionSecret, c.IDP.RedirectURI = true, strings.Repeat("s", 32), "http://login.example.com/auth/callback"
			c.Session.Enabled, c.Session.CookieDomain = true, "example.com"
		}, "needs an https redirect_uri"},
		{"cookie domain not covering the callback", func(c *File) {
			c.IDP.IncludeRoutes, c.IDP.SessionSecret, c.IDP.RedirectURI = true, strings.Repeat("s", 32), "https://login.example.org/auth/callback"
			c.Session.Enabled, c.Session.CookieDomain = true, "example.com"
		}, `session cookie domain "example.com": does not cover the callback host "login.example.org"`},
		{"rule without match", func(c *File) { c.Routes = []proxy.RouteConfig{{}} }, "routes[0]: match is required"},
		{"bad pattern", func(c *File) { c.Routes = []proxy.RouteConfig{{Match: "GET  x"}} }, `routes[0] "GET  x": invalid pattern`},
		{"public with roles", func(c *File) { c.Routes = []proxy.RouteConfig{{Match: "/x", Public: true, Roles: []string{"a"}}} }, "public excludes"},
		{"bad strategy", func(c *File) { c.Routes = []proxy.RouteConfig{{Match: "/x", Roles: []string{"a"}, Strategy: "most"}} }, "strategy"},
		{"empty role", func(c *File) { c.Routes = []proxy.RouteConfig{{Match: "/x", Roles: []string{""}}} }, "empty name"},
		{"client without roles", func(c *File) {
			c.Routes = []proxy.RouteConfig{{Match: "/x", ClientRoles: map[string][]string{"c": nil}}}
		}, "no roles"},
		{"conflict", func(c *File) {
			c.Routes = []proxy.RouteConfig{{Match: "GET /{code}", Public: true}, {Match: "/health", Public: true}}
		}, `routes[1] "/health" conflicts with routes[0] "GET /{code}"`},
		{"duplicate", func(c *File) {
			c.Routes = []proxy.RouteConfig{{Match: "POST /shorten"}, {Match: "GET /x"}, {Match: "POST /shorten", Roles: []string{"a"}}}
		}, `routes[2] "POST /shorten" conflicts with routes[0] "POST /shorten"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.mutate(&c)
			_, err := c.Check()
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
	c.Routes = []proxy.RouteConfig{{Match: "/x", Strategy: "any"}}
	_, err := c.Check()
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"default_policy", "server_url is required", "headers.roles", "strategy without roles"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// TestRuleTableGolden compiles the example configuration's rules and
// compares the table check-config prints with testdata/ruletable.golden.
func TestRuleTableGolden(t *testing.T) {
	c, err := Load(examplePath, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.IDP.ExcludedPaths = []string{"/robots.txt"}
	got, err := c.Check()
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "ruletable.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestRuleTableGolden -update)", err)
	}
	if got != string(want) {
		t.Errorf("rule table changed:\n%s\nwant:\n%s", got, want)
	}
}

// Mistakes are reported where they were made: the file's line and column
// with the closest known key, the environment variable by name.
func TestLoadPointsAtMistakes(t *testing.T) {
	tests := []struct {
		name, yaml string
		env        []string
		want       []string
	}{
		{"top-level typo", minimalYAML + "listne: 127.0.0.1:1\n", nil, []string{"c.yaml:4:1", `unknown key "listne"`, `did you mean "listen"`}},
		{"section typo", minimalYAML + "headers:\n  usr: X-User\n", nil, []string{"c.yaml:5:3", `"headers.usr"`, `did you mean "headers.user"`}},
		{"rule typo", minimalYAML + "routes:\n  - match: GET /x\n    role: [a]\n", nil, []string{"c.yaml:6:5", `"routes[0].role"`, `did you mean "routes[0].roles"`}},
		{"swapped letters", minimalYAML + "routes:\n  - match: GET /x\n    rolse: [a]\n", nil, []string{"c.yaml:6:5", `did you mean "routes[0].roles"`}},
		{"swapped letters in a short key", minimalYAML + "lsiten: 127.0.0.1:1\n", nil, []string{`did you mean "listen"`}},
		{"idp typo", "idp:\n  server_ulr: http://x\n", nil, []string{"c.yaml:2:3", `did you mean "idp.server_url"`}},
		{"bad duration with line", minimalYAML + "server:\n  read_timeout: soon\n", nil, []string{"c.yaml:5:17", "server.read_timeout", `"soon" is not a duration`}},
		{"bad bool with line", minimalYAML + "headers: {forward_token: maybe}\n", nil, []string{"c.yaml:4:", "headers.forward_token", "not true or false"}},
		{"section not a mapping", minimalYAML + "server: 5\n", nil, []string{"c.yaml:4:9", "server must be a mapping"}},
		{"env bad duration", minimalYAML, []string{"IDP_PROXY_SERVER_READ_TIMEOUT=soon"}, []string{"environment variable IDP_PROXY_SERVER_READ_TIMEOUT", "server.read_timeout", `"soon"`}},
		{"env bad bool", minimalYAML, []string{"IDP_PROXY_HEADERS_FORWARD_TOKEN=maybe"}, []string{"IDP_PROXY_HEADERS_FORWARD_TOKEN", "not true or false"}},
		{"env typo", minimalYAML, []string{"IDP_PROXY_IDP_CLIENT_SECRE=x"}, []string{"IDP_PROXY_IDP_CLIENT_SECRE", "did you mean IDP_PROXY_IDP_CLIENT_SECRET"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeFile(t, "c.yaml", tt.yaml), LoadOptions{Env: tt.env})
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if len(tt.env) > 0 && strings.Contains(err.Error(), "c.yaml") {
				t.Errorf("an environment mistake blamed on the file: %v", err)
			}
		})
	}
}

func TestCheckValidatesPorts(t *testing.T) {
	for _, tc := range []struct {
		mutate func(*File)
		want   string
	}{
		{func(f *File) { f.Listen = "127.0.0.1:70000" }, "not a TCP port"},
		{func(f *File) { f.MetricsListen = "127.0.0.1:-1" }, "metrics_listen"},
		{func(f *File) { f.Listen = "127.0.0.1:nope" }, "not a number or a known service"},
		{func(f *File) { f.Upstream.URL = "http://127.0.0.1:0" }, "upstream.url"},
		{func(f *File) { f.IDP.ServerURL = "http://127.0.0.1:123456" }, "server_url"},
		{func(f *File) { f.IDP.ServerURL = "https://sso.example.com/realms/demo" }, "already names a realm"},
	} {
		c := validConfig()
		tc.mutate(&c)
		if _, err := c.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}

// With forward_auth, the upstream may be left out: forward-auth only.
func TestForwardAuthOnlyNeedsNoUpstream(t *testing.T) {
	c := validConfig()
	c.Upstream.URL = ""
	if _, err := c.Check(); err == nil || !strings.Contains(err.Error(), "upstream.url is required") {
		t.Fatalf("no upstream, no forward_auth: %v", err)
	}
	c.ForwardAuth = ForwardAuth{Enabled: true, Listen: "127.0.0.1:4181"}
	if _, err := c.Check(); err != nil {
		t.Fatalf("forward-auth only: %v", err)
	}
}
