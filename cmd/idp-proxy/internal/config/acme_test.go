package config

import (
	"errors"
	"strings"
	"testing"
)

const acmeBase = `idp: {issuer_url: "https://issuer.example", client_id: app}
upstreams:
  - match: app.example.com/
    url: http://127.0.0.1:8000
  - match: API.example.com/v1/
    url: http://127.0.0.1:8001
`

// A valid tls.acme section loads and checks; its domains may be any of
// the upstreams' hosts, in any case.
func TestACMEConfigValid(t *testing.T) {
	for name, y := range map[string]string{
		"cache dir": acmeBase + `tls:
  acme:
    domains: [app.example.com, Api.Example.com]
    email: ops@example.com
    cache_dir: /var/lib/idp-proxy/acme
    http_listen: ":80"
    renew_before: 240h
`,
		"cache redis": acmeBase + `tls:
  acme: {domains: [app.example.com], cache: redis}
session: {redis_url: "redis://127.0.0.1:6379/0"}
`,
		// A zero written selects the default directory and cache.
		"zeros": acmeBase + `tls:
  acme: {domains: [app.example.com], directory_url: "", cache: "", cache_dir: /tmp/acme}
`,
		// The single upstream serves every host: any name is one of its.
		"single upstream": `idp: {issuer_url: "https://issuer.example", client_id: app}
upstream: {url: "http://127.0.0.1:8000"}
tls:
  acme: {domains: [anything.example.org], cache_dir: /tmp/acme}
`,
	} {
		t.Run(name, func(t *testing.T) {
			f, err := Load(writeFile(t, "c.yaml", y), LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Compile(f, CompileOptions{}); err != nil {
				t.Fatal(err)
			}
			if !f.TLS.Enabled() || !f.TLS.ACME.Enabled() || f.TLS.ACME.DirectoryURL != DefaultACMEDirectory {
				t.Fatalf("acme not on with the default directory: %+v", f.TLS.ACME)
			}
		})
	}
}

// Every problem of tls.acme is refused at load, naming the key with the
// line and column of the file.
func TestACMEConfigErrors(t *testing.T) {
	tests := []struct {
		name, tls string
		want      []string
	}{
		{"files and acme", `tls:
  cert_file: /etc/idp-proxy/tls.pem
  key_file: /etc/idp-proxy/tls.key
  acme: {domains: [app.example.com], cache_dir: /tmp/acme}
`, []string{"c.yaml:10:10:", "tls.acme and tls.cert_file/tls.key_file are exclusive"}},
		{"domain not an upstream host", `tls:
  acme:
    domains: [app.example.com, www.example.com]
    cache_dir: /tmp/acme
`, []string{"c.yaml:9:32:", `tls.acme.domains[1] "www.example.com" is not a host of upstreams (api.example.com, app.example.com)`}},
		{"wildcard", `tls:
  acme: {domains: ["*.example.com"], cache_dir: /tmp/acme}
`, []string{"c.yaml:8:20:", "wildcard names need the DNS-01 challenge"}},
		{"ip address", `tls:
  acme: {domains: [127.0.0.1], cache_dir: /tmp/acme}
`, []string{"c.yaml:8:20:", "an IP address"}},
		{"duplicate", `tls:
  acme: {domains: [app.example.com, APP.example.com], cache_dir: /tmp/acme}
`, []string{"c.yaml:8:37:", "the same name as tls.acme.domains[0]"}},
		{"no cache dir", `tls:
  acme: {domains: [app.example.com]}
`, []string{"tls.acme.cache_dir is required with tls.acme.cache: dir"}},
		{"redis without url", `tls:
  acme: {domains: [app.example.com], cache: redis}
`, []string{"tls.acme.cache: redis needs session.redis_url"}},
		{"unknown cache", `tls:
  acme: {domains: [app.example.com], cache: s3}
`, []string{"c.yaml:8:38:", `tls.acme.cache "s3": want dir or redis`}},
		{"bad email", `tls:
  acme: {domains: [app.example.com], cache_dir: /tmp/acme, email: "mailto:ops@example.com"}
`, []string{"c.yaml:8:60:", "tls.acme.email"}},
		{"http directory", `tls:
  acme: {domains: [app.example.com], cache_dir: /tmp/acme, directory_url: "http://ca.example/dir"}
`, []string{"tls.acme.directory_url \"http://ca.example/dir\": want the CA's https directory URL"}},
		{"http_listen is listen", `listen: "0.0.0.0:443"
tls:
  acme: {domains: [app.example.com], cache_dir: /tmp/acme, http_listen: "0.0.0.0:443"}
`, []string{"tls.acme.http_listen \"0.0.0.0:443\" must differ from listen"}},
		{"renew_before beyond autocert's cap", `tls:
  acme: {domains: [app.example.com], cache_dir: /tmp/acme, renew_before: 1000h}
`, []string{"tls.acme.renew_before 1000h0m0s"}},
		{"directory_ca_file missing", `tls:
  acme: {domains: [app.example.com], cache_dir: /tmp/acme, directory_ca_file: /nonexistent/ca.pem}
`, []string{"c.yaml:8:60:", "tls.acme.directory_ca_file: open /nonexistent/ca.pem"}},
		{"acme keys without domains", `tls:
  acme: {cache_dir: /tmp/acme}
`, []string{"tls.acme.domains is required when tls.acme is configured"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Load(writeFile(t, "c.yaml", acmeBase+tt.tls), LoadOptions{})
			if err == nil {
				_, err = Compile(f, CompileOptions{})
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			var ke *KeyError
			if !errors.As(err, &ke) || !strings.HasPrefix(ke.Key, "tls.acme") && !strings.HasPrefix(ke.Key, "session.") {
				t.Errorf("no KeyError of a tls.acme key: %#v", err)
			}
		})
	}
}
