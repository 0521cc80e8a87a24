package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/proxy"
)

// TestCORSCheckPositions checks that check-config reports the problems
// of routes[].cors at their line and column, as the other problems of a
// rule, each as a *KeyError naming its key.
func TestCORSCheckPositions(t *testing.T) {
	path := writeFile(t, "cors.yaml", minimalYAML+`routes:
  - match: /api/
    cors:
      allowed_origins:
        - https://app.example.com
        - https://*.com
  - match: /cred/
    public: true
    cors:
      allowed_origins: ["*"]
      allow_credentials: true
  - match: PUT /items/{id}
    cors:
      allowed_origins: [https://app.example.com]
      allowed_methods: [DELETE]
`)
	f, err := Load(path, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(f, CompileOptions{})
	if err == nil {
		t.Fatal("Compile accepted the bad CORS policies")
	}
	for _, want := range []string{
		path + ":9:11: routes[0] \"/api/\": cors: allowed_origins \"https://*.com\"",
		path + ":13:25: routes[1] \"/cred/\": cors: allowed_origins \"*\" with allow_credentials",
		path + ":18:7: routes[2] \"PUT /items/{id}\": cors: allowed_methods: DELETE is never judged",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	var ke *proxy.KeyError
	if !errors.As(err, &ke) || !strings.HasPrefix(ke.Key, "routes[") {
		t.Errorf("not a *KeyError of a route: %v", err)
	}
}

// TestCORSMaxAge checks that max_age takes a duration or a number of
// seconds, as every duration of the file.
func TestCORSMaxAge(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
	}{{"600", 10 * time.Minute}, {"10m", 10 * time.Minute}, {`"90s"`, 90 * time.Second}} {
		path := writeFile(t, "cors.yaml", minimalYAML+`routes:
  - match: /api/
    cors:
      allowed_origins: [https://app.example.com]
      max_age: `+c.in+"\n")
		f, err := Load(path, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Routes[0].CORS.MaxAge; got != c.want {
			t.Errorf("max_age: %s is %s, want %s", c.in, got, c.want)
		}
		if _, err := Compile(f, CompileOptions{}); err != nil {
			t.Errorf("max_age: %s: %v", c.in, err)
		}
	}
}
