package config

import (
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp/dpop"
)

const dpopBase = `upstream: {url: "http://127.0.0.1:8000"}
idp: {server_url: "http://127.0.0.1:8080", realm: demo, client_id: shortener, `

// check-config validates idp.dpop and routes[].dpop, naming the key.
func TestDPoPConfigChecked(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"dpop: {mode: sometimes}", "idp.dpop.mode"},
		{"dpop: {max_age: -1s}", "idp.dpop.max_age"},
		{"dpop: {algorithms: [HS256]}", "dpop"},
		{"dpop: {algorithms: [none]}", "dpop"},
		{"dpop: {nonce: true}", "session_secret"},
		{"dpop: {}}\nroutes: [{match: /x, dpop: always}]\nserver: {", `dpop "always"`},
	} {
		f, err := Load(writeFile(t, "c.yaml", dpopBase+tc.yaml+"}\n"), LoadOptions{})
		if err == nil {
			_, err = f.Check()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", tc.yaml, err, tc.want)
		}
	}
	f, err := Load(writeFile(t, "c.yaml", dpopBase+`dpop: {mode: allowed, algorithms: [ES256], max_age: 30s, nonce: true}, session_secret: "0123456789abcdef0123456789abcdef"}
routes: [{match: /x, dpop: required}]
`), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(f, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := c.IDP.DPoP; d.Mode != dpop.Allowed || !d.Nonce || d.MaxAge.Seconds() != 30 || len(d.Algorithms) != 1 {
		t.Fatalf("idp.DPoPConfig %+v", d)
	}
}
