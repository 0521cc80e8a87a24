package idp

import (
	"context"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
)

// providerLogout ends the provider session of refreshToken: a back-channel
// POST to the end-session endpoint (Keycloak ends the whole SSO session
// for client_id, client_secret and refresh_token), then RFC 7009
// revocation of the token. It answers "done" when at least one succeeded,
// "failed" when none did, "skipped" when the provider publishes neither
// endpoint (before discovery, a Keycloak realm's are its Keycloak paths;
// another issuer has none).
func (a *authRoutes) providerLogout(ctx context.Context, refreshToken string) string {
	meta := a.p.keys.meta.Load()
	if meta == nil {
		meta = &providerMetadata{}
		if a.cfg.IssuerURL == "" {
			meta.keycloakDefaults(a.p.issuer)
		}
	}
	form := url.Values{"client_id": {a.cfg.ClientID}}
	if a.cfg.ClientSecret != "" {
		form.Set("client_secret", a.cfg.ClientSecret)
	}
	ended := false
	if meta.EndSessionEndpoint != "" {
		f := maps.Clone(form)
		f.Set("refresh_token", refreshToken)
		ended = a.postForm(ctx, "end session", meta.EndSessionEndpoint, f)
	}
	revoked := false
	if meta.RevocationEndpoint != "" {
		f := maps.Clone(form)
		f.Set("token", refreshToken)
		f.Set("token_type_hint", "refresh_token")
		revoked = a.postForm(ctx, "revocation", meta.RevocationEndpoint, f)
	}
	switch {
	case ended || revoked:
		return "done"
	case meta.EndSessionEndpoint == "" && meta.RevocationEndpoint == "":
		return "skipped"
	}
	return "failed"
}

// postForm POSTs form to endpoint within HTTPTimeout and reports a 2xx
// answer. Failures are logged without the form (it holds secrets).
func (a *authRoutes) postForm(ctx context.Context, what, endpoint string, form url.Values) bool {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.HTTPTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		a.cfg.Logger.Warn("idp: logout: "+what, "error", err)
		return false
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := a.cfg.HTTPClient.Do(req)
	if err != nil {
		a.cfg.Logger.Warn("idp: logout: "+what+": identity provider unreachable", "error", err)
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		a.cfg.Logger.Info("idp: logout: "+what+" refused by the identity provider", "status", resp.StatusCode)
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
	if a.cfg.TokenLocation == TokenLocationCookie {
		http.SetCookie(w, a.accessCookie(r, "", -1))
	}
	outcome := "skipped"
	if body.RefreshToken != "" {
		outcome = a.providerLogout(r.Context(), body.RefreshToken)
	}
	writeJSON(w, http.StatusOK, map[string]any{"logged_out": true, "provider_logout": outcome})
}
