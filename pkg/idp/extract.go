package idp

import (
	"net/http"
	"strings"
)

// TokenFromRequest extracts the access token from r according to
// Config.TokenLocation, without verifying it.
//
// HEADER: exactly one Authorization header with the scheme "Bearer" or
// "DPoP" (RFC 9449 §7.1; case-insensitive) and a token of the RFC 6750 b64token alphabet. No
// header, or another scheme (a bare token included), is ErrNoToken; two
// Authorization headers are ErrInvalidRequest; a malformed token is
// ErrInvalidToken.
//
// COOKIE: the cookie Config.CookieName; two cookies of that name are
// ErrInvalidRequest. A browser's cross-origin request with an unsafe
// method (POST, PUT, PATCH, DELETE, ...; judged by net/http's
// CrossOriginProtection from Sec-Fetch-Site, else Origin against Host,
// with the origin of Config.RedirectURI trusted) carries no token: the
// browser attaches the cookie by itself, and SameSite=Lax still sends it
// from sibling subdomains, so it is not a credential there (CSRF). When
// such a request carries the cookie the error is ErrCrossOrigin (which
// wraps ErrNoToken), and Authorize does not fall back to a session.
func (p *Plugin) TokenFromRequest(r *http.Request) (string, error) {
	raw, err := p.rawToken(r)
	if err != nil {
		return "", err
	}
	return checkTokenSyntax(raw)
}

// rawToken is TokenFromRequest without the syntax check of the token
// itself (Authorize skips it for a token verified before).
func (p *Plugin) rawToken(r *http.Request) (string, error) {
	raw, _, err := p.credential(r)
	return raw, err
}

// credential is rawToken also reporting whether the token came under the
// DPoP scheme (RFC 9449 §7.1: read where Bearer is, the header only).
func (p *Plugin) credential(r *http.Request) (string, bool, error) {
	if p.cfg.TokenLocation == TokenLocationCookie {
		cs := r.CookiesNamed(p.cfg.CookieName)
		if p.cop.Check(r) != nil {
			if len(cs) == 0 {
				return "", false, ErrNoToken
			}
			return "", false, ErrCrossOrigin
		}
		switch len(cs) {
		case 0:
			return "", false, ErrNoToken
		case 1:
		default:
			return "", false, ErrInvalidRequest
		}
		return cs[0].Value, false, nil
	}
	return authorizationToken(r.Header)
}

// authorizationToken reads the Authorization header: the token of the
// Bearer or the DPoP scheme (dpop reports which).
func authorizationToken(h http.Header) (tok string, dpop bool, err error) {
	vals := h["Authorization"]
	switch len(vals) {
	case 0:
		return "", false, ErrNoToken
	case 1:
	default:
		return "", false, ErrInvalidRequest
	}
	scheme, tok, ok := strings.Cut(vals[0], " ")
	if !ok {
		return "", false, ErrNoToken
	}
	if !strings.EqualFold(scheme, "Bearer") {
		if !strings.EqualFold(scheme, "DPoP") {
			return "", false, ErrNoToken
		}
		dpop = true
	}
	return strings.TrimLeft(tok, " "), dpop, nil
}

// b64token marks the bytes of RFC 6750's b64token alphabet (without "="):
// 1 in, 0 out.
var b64token = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = 1, 1
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = 1
	}
	for _, c := range "-._~+/" {
		t[c] = 1
	}
	return t
}()

// checkTokenSyntax accepts RFC 6750's b64token: 1*( ALPHA / DIGIT / "-" /
// "." / "_" / "~" / "+" / "/" ) *"=". It looks at eight bytes per step
// (one branch instead of eight: tokens are a kilobyte or more).
func checkTokenSyntax(tok string) (string, error) {
	if tok == "" {
		return "", ErrNoToken
	}
	i := 0
	for ; i+8 <= len(tok); i += 8 {
		b := tok[i : i+8]
		if b64token[b[0]]&b64token[b[1]]&b64token[b[2]]&b64token[b[3]]&
			b64token[b[4]]&b64token[b[5]]&b64token[b[6]]&b64token[b[7]] == 0 {
			break
		}
	}
	for i < len(tok) && b64token[tok[i]] == 1 {
		i++
	}
	if i == 0 {
		return "", invalid("malformed token", nil)
	}
	for ; i < len(tok); i++ {
		if tok[i] != '=' {
			return "", invalid("malformed token", nil)
		}
	}
	return tok, nil
}
