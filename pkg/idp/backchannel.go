package idp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"time"
)

// backchannelLogoutEvent is the member of a logout token's events claim.
const backchannelLogoutEvent = "http://schemas.openid.net/event/backchannel-logout"

// maxLogoutTokenAge bounds how old (by iat) a logout token may be.
const maxLogoutTokenAge = 5 * time.Minute

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
	lt, err := a.p.verifyLogoutToken(r.Context(), form.Get("logout_token"))
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			writeUnavailable(w, nil)
			return
		}
		a.cfg.Logger.Warn("idp: back-channel logout token refused", "reason", Reason(err))
		writeProblem(w, http.StatusBadRequest, "invalid logout token: "+Reason(err))
		return
	}
	n, err := a.endSessions(r.Context(), lt)
	if err != nil {
		a.cfg.Logger.Warn("idp: back-channel logout: the session store is unavailable", "error", err)
		writeUnavailable(w, ErrSessionStoreUnavailable)
		return
	}
	a.cfg.Logger.Info("idp: back-channel logout", "sid", lt.sid, "sub", lt.sub, "sessions_ended", n)
	w.WriteHeader(http.StatusOK)
}

// logoutToken is what a verified logout token names.
type logoutToken struct{ sid, sub, jti string }

// verifyLogoutToken checks a back-channel logout token (OpenID Connect
// Back-Channel Logout 1.0 §2.6) through the token pipeline (logoutKind):
// typ, when present, JWT or logout+jwt; iss the primary issuer; the
// signature with its keys, selected as for every token; then
// checkLogoutToken. Claim names are exact, as in access tokens.
func (p *Plugin) verifyLogoutToken(ctx context.Context, raw string) (*logoutToken, error) {
	v, err := p.verifyJWT(ctx, &logoutKind, raw, p.cfg.Now(), nil, nil)
	if err != nil {
		return nil, err
	}
	c := v.claims
	return &logoutToken{sid: c.SID, sub: c.Subject, jti: c.ID}, nil
}

// checkLogoutToken is logoutKind's check: aud naming this client; no
// nonce; sid or sub; iat present, not in the future and at most 5
// minutes old; exp and nbf, when present, as for access tokens
// (checkTimes); the events claim holding the back-channel logout event as
// an object.
func checkLogoutToken(p *Plugin, k *tokenKind, v verifiedJWT, _ *expected) error {
	c := v.claims
	switch {
	case c.Issuer != v.is.url:
		return invalid("wrong issuer", nil)
	case !p.audienceOK(k.audience, v.is, c):
		return invalid("not intended for this client", nil)
	case k.nonce == nonceRefused && c.Nonce:
		return invalid("a logout token carries no nonce", nil)
	case c.SID == "" && c.Subject == "":
		return invalid("neither sid nor sub", nil)
	}
	if err := p.checkTimes(c, v.now, k.times); err != nil {
		return err
	}
	if k.event != "" && !hasEvent(c.Raw, k.event) {
		return invalid("the events claim lacks the back-channel logout event", nil)
	}
	return nil
}

// endSessions ends the sessions a logout token names and reports how many
// it ended (the cookie store records the logout instead: -1).
func (a *authRoutes) endSessions(ctx context.Context, lt *logoutToken) (int, error) {
	m := a.p.sessions
	now := a.cfg.Now()
	if m.backend == nil {
		until := now.Add(m.cfg.MaxAge).Unix()
		if lt.jti != "" && !a.used.use("logout:"+lt.jti, now.Add(maxLogoutTokenAge*2), now) {
			return 0, nil // replayed: already done
		}
		if lt.sid != "" {
			m.revoked.revokeSID(lt.sid, until)
		} else {
			m.revoked.revokeSub(lt.sub, now.Unix(), until)
		}
		return -1, nil
	}
	if lt.jti != "" {
		first, err := m.backend.SetNX(ctx, usedLogoutKey(lt.jti), []byte("1"), maxLogoutTokenAge*2)
		if err != nil {
			return 0, err
		}
		if !first {
			return 0, nil
		}
	}
	index := sessionBySID(lt.sid)
	if lt.sid == "" {
		index = sessionBySub(lt.sub)
	}
	ids, err := m.backend.SetMembers(ctx, index)
	if err != nil {
		return 0, err
	}
	keys := make([]string, 0, len(ids)+1)
	for _, id := range ids {
		keys = append(keys, sessionKey(id))
	}
	if err := m.backend.Delete(ctx, append(keys, index)...); err != nil {
		return 0, err
	}
	return len(ids), nil
}
