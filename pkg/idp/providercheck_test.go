package idp_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// CheckProvider reads the token endpoint's answer to its made-up code:
// only invalid_grant confirms the client; a refusal of the client, of its
// flow or a failing endpoint is a failure with the matching sentinel.
func TestCheckProviderClientAnswers(t *testing.T) {
	var answer atomic.Value
	tokenEP := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answer.Load().([2]string)
		w.Header().Set("Content-Type", "application/json")
		if a[0] == "401" {
			w.WriteHeader(401)
		} else if a[0] == "500" {
			w.WriteHeader(500)
		} else {
			w.WriteHeader(400)
		}
		_, _ = w.Write([]byte(`{"error":"` + a[1] + `"}`))
	}))
	t.Cleanup(tokenEP.Close)
	srv := idptest.NewServer(t, idptest.Options{PlainIssuer: true,
		Discovery: func(doc map[string]any) { doc["token_endpoint"] = tokenEP.URL + "/token" }})
	cfg := idp.Config{IssuerURL: srv.Issuer, ClientID: clientID, ClientSecret: clientSecret, IncludeRoutes: true,
		RedirectURI: "http://app.example/auth/callback", SessionSecret: []byte(sessionSecret)}
	for _, c := range []struct {
		status, code string
		result       idp.CheckResult
		err          error
		msg          string
	}{
		{"400", "invalid_grant", idp.CheckPassed, nil, "authenticated"},
		{"401", "invalid_client", idp.CheckFailed, idp.ErrClientRejected, "refused its credentials (401 invalid_client)"},
		{"400", "invalid_client", idp.CheckFailed, idp.ErrClientRejected, "refused its credentials (400 invalid_client)"},
		{"401", "unauthorized_client", idp.CheckFailed, idp.ErrClientRejected, "refused its credentials (401 unauthorized_client)"},
		{"400", "unauthorized_client", idp.CheckFailed, idp.ErrClientRejected, "may not use the authorization code flow"},
		{"500", "server_error", idp.CheckFailed, idp.ErrUnavailable, "the token endpoint failed (500 server_error)"},
		{"400", "invalid_request", idp.CheckSkipped, nil, "not confirmed"},
	} {
		answer.Store([2]string{c.status, c.code})
		checks, err := idp.CheckProvider(t.Context(), cfg, idp.ProviderCheckOptions{})
		if err != nil || len(checks) != 3 || checks[0].Result != idp.CheckPassed || checks[1].Result != idp.CheckPassed {
			t.Fatalf("%v %+v", err, checks)
		}
		got := checks[2]
		if got.What != "client" || got.Result != c.result || !strings.Contains(got.Message, c.msg) ||
			(c.err == nil) != (got.Err == nil) || c.err != nil && !errors.Is(got.Err, c.err) {
			t.Errorf("%s %s: %+v", c.status, c.code, got)
		}
	}
}
