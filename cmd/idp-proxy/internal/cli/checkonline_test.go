package cli

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// check-config says what it cannot know offline; --online contacts every
// trusted issuer and the client's token endpoint, and each mistake it
// finds is a failure (exit status 1) that names it.
func TestCheckConfigOnline(t *testing.T) {
	shortener := idptest.Client{ID: "shortener", Secret: "shortener-secret"}
	good := idptest.NewServer(t, idptest.Options{PlainIssuer: true, Clients: []idptest.Client{shortener}})
	cfg := writeIssuerConfig(t, good, "http://127.0.0.1:8000")

	out, _, err := run(t, deps{}, "check-config", cfg)
	if err != nil || !strings.Contains(out, "configuration OK") ||
		!strings.Contains(out, "not checked offline: provider reachability, issuer match, client credentials; run check-config --online") {
		t.Fatalf("offline: %v\n%s", err, out)
	}
	out, _, err = run(t, deps{}, "check-config", "--online", cfg)
	if err != nil {
		t.Fatalf("online, everything right: %v\n%s", err, out)
	}
	for _, want := range []string{"online checks:", "ok    discovery default: " + good.Issuer + "/.well-known/openid-configuration names this issuer",
		"ok    keys default:", "ok    client default: client shortener: authenticated at " + good.TokenURL()} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "not checked offline") {
		t.Errorf("--online still says what it did not check:\n%s", out)
	}
	out, _, err = run(t, deps{}, "check-config", "--online", "--no-secrets", cfg)
	if err != nil || !strings.Contains(out, "skip  client default: client shortener not checked: its secret is not at hand") {
		t.Errorf("--online --no-secrets: %v\n%s", err, out)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + ln.Addr().String()
	_ = ln.Close()
	other := idptest.NewServer(t, idptest.Options{PlainIssuer: true, Clients: []idptest.Client{shortener},
		Discovery: func(doc map[string]any) { doc["issuer"] = "https://login.example.com" }})
	failing := idptest.NewServer(t, idptest.Options{PlainIssuer: true, Clients: []idptest.Client{shortener}})
	failing.SetDown(true)
	withIssuer := func(url string) string {
		return strings.Replace(mustRead(t, cfg), fmt.Sprintf("issuer_url: %q", good.Issuer), fmt.Sprintf("issuer_url: %q", url), 1)
	}
	secondIssuer := strings.Replace(mustRead(t, cfg), "  client_id: shortener\n", fmt.Sprintf(`  client_id: shortener
  issuers:
    - {name: ci, issuer_url: %q, audiences: [ci]}
`, other.Issuer), 1)
	for _, c := range []struct {
		name, yaml string
		env        []string
		want       []string
	}{
		{"wrong issuer", withIssuer(other.Issuer), nil, []string{"FAIL  discovery default:", `FAIL  discovery default: ` + other.Issuer + `/.well-known/openid-configuration names the issuer "https://login.example.com", not the configured "` + other.Issuer + `"`,
			"skip  client default: client shortener not checked: the provider's discovery failed"}},
		{"provider not answering", withIssuer(deadURL), nil, []string{"FAIL  discovery default:", "FAIL  discovery default: the provider cannot be reached: Get", "connection refused"}},
		{"provider failing", withIssuer(failing.Issuer), nil, []string{"FAIL  discovery default:", "the provider cannot be reached", "503"}},
		{"wrong client secret", mustRead(t, cfg), []string{"IDP_PROXY_IDP_CLIENT_SECRET=not-the-secret"},
			[]string{"ok    discovery default:", "FAIL  client default: client shortener: the token endpoint refused its credentials (401 invalid_client): check client_id and client_secret"}},
		{"no client secret", strings.Replace(mustRead(t, cfg), "  client_secret: shortener-secret\n", "", 1), nil,
			[]string{"FAIL  client default:", "(401 invalid_client): client_secret is empty"}},
		{"a trusted issuer names another", secondIssuer, nil, []string{"ok    client default:", "FAIL  discovery ci:", `names the issuer "https://login.example.com"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := t.TempDir() + "/proxy.yaml"
			if err := os.WriteFile(p, []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, _, err := run(t, deps{environ: c.env}, "check-config", p); err != nil {
				t.Fatalf("offline check refused the file: %v\n%s", err, out)
			}
			out, _, err := run(t, deps{environ: c.env}, "check-config", "--online", p)
			if err == nil || !strings.Contains(err.Error(), "online check(s) failed") {
				t.Errorf("error %v, want a failed online check", err)
			}
			for _, want := range c.want {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}
