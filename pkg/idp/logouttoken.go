package idp

import (
	"context"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/authflow"
)

// Back-channel logout tokens (OpenID Connect Back-Channel Logout 1.0), one
// kind of the token pipeline (logoutKind); the route that receives them is
// authflow's.

// backchannelLogoutEvent is the member of a logout token's events claim.
const backchannelLogoutEvent = "http://schemas.openid.net/event/backchannel-logout"

// maxLogoutTokenAge bounds how old (by iat) a logout token may be.
const maxLogoutTokenAge = authflow.MaxLogoutTokenAge

// verifyLogoutToken checks a back-channel logout token (OpenID Connect
// Back-Channel Logout 1.0 §2.6) through the token pipeline (logoutKind):
// typ, when present, JWT or logout+jwt; iss the primary issuer; the
// signature with its keys, selected as for every token; then
// checkLogoutToken. Claim names are exact, as in access tokens.
func (p *Plugin) verifyLogoutToken(ctx context.Context, raw string) (authflow.LogoutToken, error) {
	v, err := p.verifyJWT(ctx, &logoutKind, raw, p.cfg.Now(), nil, nil)
	if err != nil {
		return authflow.LogoutToken{}, err
	}
	c := v.claims
	return authflow.LogoutToken{SID: c.SID, Sub: c.Subject, JTI: c.ID}, nil
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
