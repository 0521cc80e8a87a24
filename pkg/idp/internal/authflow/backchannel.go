package authflow

import (
	"context"
	"errors"
	"fmt"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/idperr"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
	"io"
	"mime"
	"net/http"
	"net/url"
)

// backchannelLogout serves OpenID Connect Back-Channel Logout 1.0: the
// provider POSTs a logout token (form field logout_token); a valid one
// ends the matching sessions at once: the provider session's (sid), or
// all of the user's (sub) when it names no sid. 200 when done, 400 for
// a token that does not verify, 503 when the session store is down.
func (a *authRoutes) backchannelLogout(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		writeProblem(w, http.StatusUnsupportedMediaType, "the body must be application/x-www-form-urlencoded")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAuthBody))
	if err != nil {
		writeProblem(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", maxAuthBody))
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil || len(form["logout_token"]) != 1 || form.Get("logout_token") == "" {
		writeProblem(w, http.StatusBadRequest, "exactly one logout_token is required")
		return
	}
	lt, err := a.d.VerifyLogoutToken(r.Context(), form.Get("logout_token"))
	if err != nil {
		if errors.Is(err, idperr.ErrUnavailable) {
			a.writeUnavailable(w, nil)
			return
		}
		a.d.Logger.Warn("idp: back-channel logout token refused", "reason", reason(err))
		writeProblem(w, http.StatusBadRequest, "invalid logout token: "+reason(err))
		return
	}
	n, err := a.endSessions(r.Context(), lt)
	if err != nil {
		a.d.Logger.Warn("idp: back-channel logout: the session store is unavailable", "error", err)
		a.writeUnavailable(w, idperr.ErrSessionStoreUnavailable)
		return
	}
	if a.d.SessionEnded != nil {
		if lt.SID != "" {
			a.d.SessionEnded(lt.SID, "")
		} else {
			a.d.SessionEnded("", lt.Sub)
		}
	}
	a.d.Logger.Info("idp: back-channel logout", "sid", lt.SID, "sub", lt.Sub, "sessions_ended", n)
	w.WriteHeader(http.StatusOK)
}

// endSessions ends the sessions a logout token names and reports how many
// it ended (the cookie store records the logout instead: -1).
func (a *authRoutes) endSessions(ctx context.Context, lt LogoutToken) (int, error) {
	keep := MaxLogoutTokenAge * 2
	return a.d.Sessions.EndProviderSessions(ctx, lt.SID, lt.Sub, lt.JTI, keep, func(jti string) bool {
		now := a.d.Now()
		return a.used.use("logout:"+jti, now.Add(keep), now)
	})
}

// reason is the client-safe reason of a refused token (idp.Reason).
func reason(err error) string {
	var te *token.Error
	if errors.As(err, &te) {
		return te.Reason
	}
	return ""
}
