package authflow

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/idp-proxy/idp-proxy/internal/jsondoc"
	"golang.org/x/oauth2"
)

// providerLogout ends the provider session of refreshToken. At a Keycloak
// realm: a back-channel POST to the end-session endpoint (Keycloak ends
// the whole SSO session for client_id, client_secret and refresh_token),
// then RFC 7009 revocation of the token. At another issuer, revocation
// only: its end-session endpoint is for browsers (RP-Initiated Logout), and
// must not receive the client's secret. It answers "done" when at least
// one call succeeded, "failed" when none did, "skipped" when the provider
// publishes no endpoint to call (before discovery, a Keycloak realm's are
// its Keycloak paths; another issuer has none).
func (a *authRoutes) providerLogout(ctx context.Context, refreshToken string) string {
	e := a.d.Endpoints()
	called, ok := false, false
	if a.d.KeycloakLogout && e.EndSession != "" {
		called = true
		ok = a.postForm(ctx, "end session", e.EndSession, url.Values{"refresh_token": {refreshToken}}, oauth2.AuthStyleInParams)
	}
	if e.Revocation != "" {
		called = true
		f := url.Values{"token": {refreshToken}, "token_type_hint": {"refresh_token"}}
		ok = a.postForm(ctx, "revocation", e.Revocation, f, e.RevocationAuthStyle) || ok
	}
	switch {
	case !called:
		return "skipped"
	case ok:
		return "done"
	}
	return "failed"
}

// postForm POSTs form with the client's credentials (in the form, or HTTP
// Basic as RFC 6749 §2.3.1 encodes them) to endpoint within HTTPTimeout
// and reports a 2xx answer. Failures are logged without the form (it holds
// secrets).
func (a *authRoutes) postForm(ctx context.Context, what, endpoint string, form url.Values, style oauth2.AuthStyle) bool {
	if style == oauth2.AuthStyleInParams || a.d.ClientSecret == "" {
		form.Set("client_id", a.d.ClientID)
		if a.d.ClientSecret != "" {
			form.Set("client_secret", a.d.ClientSecret)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, a.d.HTTPTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		a.d.Logger.Warn("idp: logout: "+what, "error", err)
		return false
	}
	if _, inForm := form["client_id"]; !inForm {
		req.SetBasicAuth(url.QueryEscape(a.d.ClientID), url.QueryEscape(a.d.ClientSecret))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := a.d.HTTPClient.Do(req)
	if err != nil {
		a.d.Logger.Warn("idp: logout: "+what+": identity provider unreachable", "error", err)
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		a.d.Logger.Info("idp: logout: "+what+" refused by the identity provider", "status", resp.StatusCode)
		return false
	}
	return true
}

func (a *authRoutes) logout(w http.ResponseWriter, r *http.Request) {
	var body struct {
		RefreshToken string `json:"refresh_token"`
	}
	if !a.checkPOST(w, r) || !decodeBody(w, r, &body, true) {
		return
	}
	if body.RefreshToken != "" && !validOpaqueToken(body.RefreshToken) {
		writeProblem(w, http.StatusBadRequest, "refresh_token is malformed")
		return
	}
	http.SetCookie(w, a.stateCookie(r, "", -1))
	if a.d.TokenCookie != "" {
		http.SetCookie(w, a.accessCookie(r, "", -1))
	}
	outcome := "skipped"
	if body.RefreshToken != "" {
		outcome = a.providerLogout(r.Context(), body.RefreshToken)
	}
	jsondoc.Write(w, http.StatusOK, map[string]any{"logged_out": true, "provider_logout": outcome}, jsondoc.Options{Credentials: true})
}
