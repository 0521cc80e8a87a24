package idp_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

func TestNewRejectsBadConfig(t *testing.T) {
	valid := idp.Config{ServerURL: "http://127.0.0.1:1", Realm: "demo", ClientID: "c"}
	secret := []byte(strings.Repeat("s", 32))
	tests := []struct {
		name   string
		mutate func(*idp.Config)
		want   string
	}{
		{"missing server_url", func(c *idp.Config) { c.ServerURL = "" }, "server_url is required"},
		{"missing realm", func(c *idp.Config) { c.Realm = "" }, "realm is required"},
		{"neither issuer_url nor server_url", func(c *idp.Config) { c.ServerURL, c.Realm = "", "" }, "or IssuerURL"},
		{"issuer_url and server_url", func(c *idp.Config) { c.IssuerURL = "https://sso.example.com" }, "IssuerURL excludes ServerURL and Realm"},
		{"issuer_url and realm", func(c *idp.Config) { c.IssuerURL, c.ServerURL = "https://sso.example.com", "" }, "IssuerURL excludes ServerURL and Realm"},
		{"issuer_url with query", func(c *idp.Config) { c.IssuerURL, c.ServerURL, c.Realm = "https://sso.example.com?x=1", "", "" }, "no query or fragment"},
		{"issuer_url with fragment", func(c *idp.Config) { c.IssuerURL, c.ServerURL, c.Realm = "https://sso.example.com#x", "", "" }, "no query or fragment"},
		{"issuer_url relative", func(c *idp.Config) { c.IssuerURL, c.ServerURL, c.Realm = "/issuer", "", "" }, "IssuerURL"},
		{"missing client_id", func(c *idp.Config) { c.ClientID = "" }, "ClientID is required"},
		{"server_url not a URL", func(c *idp.Config) { c.ServerURL = "://x" }, "server_url"},
		{"server_url wrong scheme", func(c *idp.Config) { c.ServerURL = "ftp://sso" }, "scheme must be http or https"},
		{"server_url user info", func(c *idp.Config) { c.ServerURL = "https://u:p@sso" }, "user info"},
		{"realm with slash", func(c *idp.Config) { c.Realm = "a/b" }, "realm"},
		{"redirect_uri missing", func(c *idp.Config) { c.IncludeRoutes = true; c.SessionSecret = secret }, "RedirectURI is required"},
		{"redirect_uri malformed", func(c *idp.Config) {
			c.IncludeRoutes = true
			c.SessionSecret = secret
			c.RedirectURI = "/relative"
		}, "RedirectURI"},
		{"session secret short", func(c *idp.Config) {
			c.IncludeRoutes = true
			c.RedirectURI = "http://x/cb"
			c.SessionSecret = []byte("short")
		}, "session secret"},
		{"token location unknown", func(c *idp.Config) { c.TokenLocation = "QUERY" }, "TokenLocation"},
		{"cookie name invalid", func(c *idp.Config) { c.TokenLocation = idp.TokenLocationCookie; c.CookieName = "a b" }, "CookieName"},
		{"negative ttl", func(c *idp.Config) { c.JWKSCacheTTL = -time.Second }, "JWKSCacheTTL"},
		{"negative timeout", func(c *idp.Config) { c.HTTPTimeout = -time.Second }, "HTTPTimeout"},
		{"symmetric alg", func(c *idp.Config) { c.Algorithms = []string{"HS256"} }, "symmetric"},
		{"none alg", func(c *idp.Config) { c.Algorithms = []string{"none"} }, "never accepted"},
		{"unknown alg", func(c *idp.Config) { c.Algorithms = []string{"RS257"} }, "unknown"},
		{"excluded path relative", func(c *idp.Config) { c.ExcludedPaths = []string{"health"} }, "ExcludedPaths"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := valid
			tt.mutate(&cfg)
			p, err := idp.New(t.Context(), cfg)
			if err == nil {
				p.Close()
				t.Fatal("New accepted the config")
			}
			if !errors.Is(err, idp.ErrConfig) {
				t.Errorf("error %v does not wrap ErrConfig", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	p, err := idp.New(t.Context(), idp.Config{ServerURL: "http://127.0.0.1:1/", Realm: "demo", ClientID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := p.Config()
	if c.TokenLocation != idp.TokenLocationHeader || c.CookieName != "access_token" || c.AuthPrefix != "/auth" ||
		c.Audience != "c" || c.JWKSCacheTTL != time.Hour || c.HTTPTimeout != 10*time.Second ||
		len(c.Algorithms) != 1 || c.Algorithms[0] != "RS256" || c.Leeway != idp.DefaultLeeway {
		t.Fatalf("defaults not applied: %+v", c)
	}
	if got, want := p.Issuer(), "http://127.0.0.1:1/realms/demo"; got != want {
		t.Fatalf("Issuer = %q, want %q", got, want)
	}
}

func TestConfigIssuerURL(t *testing.T) {
	for _, iss := range []string{"https://example.okta.com/oauth2/default", "https://accounts.google.com", "https://login.example.com/tenant/v2.0/"} {
		c := idp.Config{IssuerURL: iss, ClientID: "app"}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", iss, err)
		}
		if c.Issuer() != iss || c.WithDefaults().Issuer() != iss {
			t.Errorf("Issuer() = %q, want %q unchanged", c.WithDefaults().Issuer(), iss)
		}
	}
}

func TestConfigRefusesRealmInServerURLAndBadPorts(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"https://sso.example.com/realms/demo", `set server_url to "https://sso.example.com" and realm to "demo"`},
		{"http://127.0.0.1:8080/realms/demo/", `realm to "demo"`},
		{"http://127.0.0.1:99999", "not a TCP port"},
		{"http://127.0.0.1:0", "not a TCP port"},
		{"http://127.0.0.1:", "empty port"},
	} {
		err := idp.Config{ServerURL: tc.url, Realm: "demo", ClientID: "app"}.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.url, err, tc.want)
		}
	}
	err := idp.Config{ServerURL: "https://sso.example.com", Realm: "demo", ClientID: "app", IncludeRoutes: true,
		RedirectURI: "http://127.0.0.1:70000/cb", SessionSecret: make([]byte, 32)}.Validate()
	if err == nil || !strings.Contains(err.Error(), "RedirectURI") {
		t.Errorf("bad redirect port: %v", err)
	}
}

func TestConfigValidateExported(t *testing.T) {
	if err := (idp.Config{ServerURL: "https://sso.example.com", Realm: "demo", ClientID: "app"}).Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	err := (idp.Config{Realm: "demo", Algorithms: []string{"HS256"}}).Validate()
	if !errors.Is(err, idp.ErrConfig) || !strings.Contains(err.Error(), "server_url is required") || !strings.Contains(err.Error(), "symmetric") {
		t.Fatalf("Validate = %v", err)
	}
}

// A session secret copied from an example (a placeholder) is refused
// whatever its length: anyone who read the example could forge cookies.
func TestPlaceholderSessionSecretRefused(t *testing.T) {
	base := idp.Config{ServerURL: "http://127.0.0.1:1", Realm: "demo", ClientID: "c",
		IncludeRoutes: true, RedirectURI: "https://app.example/auth/callback"}
	for _, s := range []string{
		"replace-with-openssl-rand-base64-48-output-000000", // deploy/k8s/secret.example.yaml
		"demo-session-secret-CHANGE-ME-0123456789abcdef",
		"changeme-changeme-changeme-changeme",
		"<placeholder: 32 random bytes, base64>",
	} {
		c := base
		c.SessionSecret = []byte(s)
		if err := c.Validate(); err == nil || !errors.Is(err, idp.ErrConfig) || !strings.Contains(err.Error(), "placeholder") {
			t.Errorf("session secret %q: %v, want a placeholder error", s, err)
		}
		c.SessionSecret = []byte("k3J9d0Vb4tQ1mZ8xW2rN7pL5sH6gF0aE")
		c.Session = &idp.SessionConfig{PreviousSecrets: [][]byte{[]byte(s)}}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "previous session secret 1 is a placeholder") {
			t.Errorf("previous secret %q: %v", s, err)
		}
	}
	c := base
	c.SessionSecret = []byte("k3J9d0Vb4tQ1mZ8xW2rN7pL5sH6gF0aE")
	if err := c.Validate(); err != nil {
		t.Errorf("a generated secret: %v", err)
	}
}

// Every problem Validate reports is a *ConfigError naming its field by
// its Go path, Missing only for a required field that is not set, so a caller
// can point at the key without reading the message.
func TestConfigErrorsNameTheirField(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     idp.Config
		field   string
		missing bool
	}{
		{"no realm", idp.Config{ServerURL: "http://127.0.0.1:8080", ClientID: "c"}, "Realm", true},
		{"no client id", idp.Config{ServerURL: "http://127.0.0.1:8080", Realm: "r"}, "ClientID", true},
		{"bad realm", idp.Config{ServerURL: "http://127.0.0.1:8080", Realm: "a/b", ClientID: "c"}, "Realm", false},
		{"no redirect uri", idp.Config{IssuerURL: "http://127.0.0.1:8080", ClientID: "c", IncludeRoutes: true, SessionSecret: []byte(strings.Repeat("k", 32))}, "RedirectURI", true},
		{"short session secret", idp.Config{IssuerURL: "http://127.0.0.1:8080", ClientID: "c", IncludeRoutes: true, RedirectURI: "http://127.0.0.1:4180/auth/callback", SessionSecret: []byte("short")}, "SessionSecret", false},
		{"symmetric algorithm", idp.Config{IssuerURL: "http://127.0.0.1:8080", ClientID: "c", Algorithms: []string{"HS256"}}, "Algorithms", false},
		{"session cookie domain", idp.Config{IssuerURL: "http://127.0.0.1:8080", ClientID: "c", IncludeRoutes: true, RedirectURI: "https://login.example.org/auth/callback", SessionSecret: []byte(strings.Repeat("k", 32)),
			Session: &idp.SessionConfig{CookieDomain: "example.com"}}, "Session.CookieDomain", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if !errors.Is(err, idp.ErrConfig) {
				t.Fatalf("Validate = %v, want an ErrConfig", err)
			}
			found := false
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var ce *idp.ConfigError
				if !errors.As(e, &ce) {
					t.Errorf("%v is not a *ConfigError", e)
					continue
				}
				if ce.Field == tc.field {
					found = true
					if ce.Missing != tc.missing {
						t.Errorf("%s: Missing = %v, want %v", ce.Field, ce.Missing, tc.missing)
					}
				}
			}
			if !found {
				t.Errorf("Validate = %v, want a problem of %s", err, tc.field)
			}
		})
	}
}
