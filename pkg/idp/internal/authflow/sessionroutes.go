package authflow

import (
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/idp-proxy/idp-proxy/internal/jsondoc"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/idperr"
	"golang.org/x/oauth2"
)

// The /auth routes in session mode (idp.Config.Session): the callback starts a
// session and redirects back, logout ends it, and the provider ends
// sessions through OpenID Connect Back-Channel Logout 1.0.

// startSession answers a completed login in session mode: a session, its
// cookie, and a redirect to where the login began.
// sid is the ID token's (verifyIDToken decoded it).
func (a *authRoutes) startSession(w http.ResponseWriter, r *http.Request, tok *oauth2.Token, rawID, sid string, id Access, returnTo string) {
	cookies, err := a.d.Sessions.Create(r.Context(), r, tok, rawID, id.Sub, sid, id.Times)
	if err != nil {
		if errors.Is(err, idperr.ErrUnavailable) {
			a.d.Logger.Warn("idp: callback: the session could not be stored", "error", err)
			a.writeUnavailable(w, err)
			return
		}
		a.d.Logger.Error("idp: callback: the session could not be created", "error", err)
		writeProblem(w, http.StatusBadGateway, "the session could not be created: "+err.Error())
		return
	}
	for _, c := range cookies {
		http.SetCookie(w, c)
	}
	if returnTo == "" {
		returnTo = "/"
	}
	// Re-validated: the sealed state was checked when it was made, but
	// the redirect is the dangerous step.
	if t, ok := a.returnTarget(returnTo, ""); ok {
		returnTo = t
	} else {
		returnTo = "/"
	}
	http.Redirect(w, r, returnTo, http.StatusFound)
}

// sessionLogout ends the session of the request: locally, at the provider
// (the refresh token is revoked and the provider's session ended by a
// back-channel call), and, for a browser, through the provider's
// end_session_endpoint with id_token_hint and the post-logout redirect.
// GET is accepted for links and forms; a cross-site request is refused.
func (a *authRoutes) sessionLogout(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" || a.d.CrossOrigin(r) != nil {
		writeProblem(w, http.StatusForbidden, "cross-site request refused")
		return
	}
	var body struct {
		RefreshToken string `json:"refresh_token"`
	}
	if r.Method == http.MethodPost {
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "application/json" || r.ContentLength > 0 {
			if !decodeBody(w, r, &body, true) {
				return
			}
		}
		if body.RefreshToken != "" && !validOpaqueToken(body.RefreshToken) {
			writeProblem(w, http.StatusBadRequest, "refresh_token is malformed")
			return
		}
	}
	s, clear, err := a.d.Sessions.End(r.Context(), r)
	storeDown := err != nil
	if storeDown {
		// The sign-out holds in this browser (its cookie is cleared); the
		// session is deleted from the store, and ended at the provider,
		// once the store answers again.
		a.d.Logger.Warn("idp: logout while the session store is unavailable: the cookie is cleared, the session is deleted from the store when it is back", "error", err)
	}
	for _, c := range clear {
		http.SetCookie(w, c)
	}
	http.SetCookie(w, a.stateCookie(r, "", -1))
	w.Header().Set("Cache-Control", "no-store")
	// The session's refresh token, or (an API client of the session mode,
	// as in the API mode) the one in the body.
	refresh := body.RefreshToken
	if s != nil && s.Refresh != "" {
		refresh = s.Refresh
	}
	outcome := "skipped"
	if refresh != "" {
		outcome = a.providerLogout(r.Context(), refresh)
	} else if storeDown && s == nil {
		outcome = "pending" // when the session can be read again
	}
	if s != nil && a.d.SessionEnded != nil {
		if s.SID != "" {
			a.d.SessionEnded(s.SID, "")
		} else {
			a.d.SessionEnded("", s.Sub)
		}
	}
	if s != nil {
		a.d.Logger.Info("idp: session ended by logout", "sub", s.Sub, "provider_logout", outcome)
	}
	if !IsNavigation(r) && !(r.Method == http.MethodPost && acceptsHTML(r)) {
		body := map[string]any{"logged_out": true, "provider_logout": outcome}
		if storeDown {
			body["session_store"] = "unavailable"
			body["detail"] = "signed out in this browser; the session store is unavailable, so the session is deleted there (and ended at the provider) when it is back"
		}
		jsondoc.Write(w, http.StatusOK, body, jsondoc.Options{Credentials: true})
		return
	}
	target := a.d.PostLogoutRedirectURI
	if target == "" {
		target = "/"
	}
	if e := a.d.Endpoints(); e.Known && e.EndSession != "" && s != nil && s.IDToken != "" {
		if u, err := url.Parse(e.EndSession); err == nil {
			q := u.Query()
			q.Set("client_id", a.d.ClientID)
			q.Set("id_token_hint", s.IDToken)
			if pl := a.d.PostLogoutRedirectURI; pl != "" {
				q.Set("post_logout_redirect_uri", pl)
			}
			u.RawQuery = q.Encode()
			target = u.String()
		}
	}
	http.Redirect(w, r, target, http.StatusFound)
}

func acceptsHTML(r *http.Request) bool {
	return strings.Contains(strings.ToLower(strings.Join(r.Header.Values("Accept"), ",")), "text/html")
}
