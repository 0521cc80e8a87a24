package interop_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Two providers at once: the Keycloak realm (the primary issuer,
// "default") and an Entra-shaped plain issuer trusted as "entra" with its
// own audience and claim mapping. A rule that accepts only one of them
// refuses the other's valid tokens with 403; a rule that names none takes
// both; the metrics count requests by issuer.
func TestProxyTwoIssuers(t *testing.T) {
	t.Parallel()
	requireTools(t, needProvider)
	port := freePort(t)
	kc := startProvider(t, providerOptions{RedirectURIs: []string{"http://127.0.0.1:" + strconv.Itoa(port) + "/auth/callback"}})
	entra := startProvider(t, providerOptions{Plain: true, Shape: "entra"})
	up := startEchoUpstream(t, "app")
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	opsAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	yaml := proxyYAMLHead("127.0.0.1:"+strconv.Itoa(port), opsAddr, up.URL, realmYAML(kc.ServerURL()), base,
		"  optional_audiences: ["+svcClientID+"]\n"+
			"  issuers:\n"+
			"    - name: entra\n"+
			"      issuer_url: "+entra.Issuer+"\n"+
			"      audiences: [shortener]\n"+
			"      claims: {preset: generic}\n") + `routes:
  - match: GET /company/
    issuers: [default]
  - match: GET /partner/
    issuers: [entra]
    roles: [creator]
  - match: GET /any/
default_policy: deny
log:
  format: json
  level: debug
`
	px := startProxyYAML(t, "idp-proxy", yaml, opsAddr)

	kcTok, entraTok := serviceToken(t, kc), serviceToken(t, entra)
	wantStatus(t, base, kcTok, map[string]int{"/company/data": http.StatusOK, "/partner/data": http.StatusForbidden, "/any/data": http.StatusOK})
	wantStatus(t, base, entraTok, map[string]int{"/company/data": http.StatusForbidden, "/partner/data": http.StatusOK, "/any/data": http.StatusOK})
	if status, e := echoed(t, base+"/partner/data", entraTok); status != http.StatusOK || e.Username != e.User || e.Roles != "creator" {
		t.Errorf("the entra token read with its issuer's mapping: %d, upstream saw %+v", status, e)
	}
	if a := call(t, "GET", base+"/company/data", entraTok, nil); !strings.Contains(string(a.Body), `"clause":"issuers"`) {
		t.Errorf("403 of the other issuer's token does not name the issuers clause: %s", a)
	}

	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + opsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`idp_proxy_issuer_requests_total{decision="allowed",issuer="entra"} 3`,
		`idp_proxy_issuer_requests_total{decision="forbidden",issuer="entra"} 2`,
		`idp_proxy_issuer_requests_total{decision="allowed",issuer="default"} 2`,
		`idp_proxy_issuer_jwks_ready{issuer="entra"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	checkNoTokens(t, px)
}
