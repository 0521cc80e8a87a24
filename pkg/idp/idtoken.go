package idp

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"math"
	"strings"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

// verifyIDToken checks the login flow's ID token (OpenID Connect Core
// §3.1.3.7) through the token pipeline (idKind): parsed once, iss the
// primary issuer, the signature with its keys (selected as for every
// token, with one of Config.Algorithms), then checkIDToken. wantNonce is
// the login's nonce ("" on a refresh, where it is not known: OIDC Core
// §12.2 lets it be absent or repeated); accessToken is the access token
// issued with it, which at_hash, when present, must match. It returns the
// claims, decoded once.
func (p *Plugin) verifyIDToken(ctx context.Context, raw, wantNonce, accessToken string) (*token.Claims, error) {
	v, err := p.verifyJWT(ctx, &idKind, raw, p.cfg.Now(), &expected{nonce: wantNonce, accessToken: accessToken}, nil)
	if err != nil {
		return nil, fmt.Errorf("idp: id token: %w", err)
	}
	return v.claims, nil
}

// idTokenSigned reports whether raw is an ID token of the primary issuer
// with a valid signature and exact claim names (idHintKind), as a session
// keeps it for the logout's id_token_hint.
func (p *Plugin) idTokenSigned(ctx context.Context, raw string) bool {
	_, err := p.verifyJWT(ctx, &idHintKind, raw, p.cfg.Now(), nil, nil)
	return err == nil
}

// checkIDToken is idKind's check. Its claim names are exact (see
// checkIDTokenNames); nonce, at_hash, azp and typ, when present and not
// null, strings; exp, iat and nbf within float64's range; distributed claims (_claim_names) name sources that
// _claim_sources holds; aud contains ClientID; exp (required), nbf and
// iat (required, not in the future) as for access tokens (checkTimes,
// which reads them without overflow and with Config.Leeway); sub present;
// typ "ID" when present; azp required with several audiences, equal to
// ClientID when present; the nonce, when one is expected; at_hash, when
// present.
func checkIDToken(p *Plugin, k *tokenKind, v verifiedJWT, want *expected) error {
	nonce, atHash, err := readIDTokenMembers(v.claims.Raw)
	if err != nil {
		return err
	}
	c := v.claims
	// Dates are numbers within float64's range: past it (1e400) a
	// reader of the token (go-oidc, encoding/json) cannot decode them.
	for _, d := range [...]struct {
		name string
		has  bool
		at   float64
	}{{"exp", c.HasExp, c.Exp}, {"iat", c.HasIat, c.Iat}, {"nbf", c.HasNbf, c.Nbf}} {
		if d.has && math.IsInf(d.at, 0) {
			return invalid(d.name+" is beyond float64's range", nil)
		}
	}
	if !p.audienceOK(k.audience, v.is, c) {
		return fmt.Errorf("expected audience %q got %q", p.cfg.ClientID, c.Audience)
	}
	if err := p.checkTimes(c, v.now, k.times); err != nil {
		return err
	}
	switch {
	case c.Subject == "":
		return errors.New("sub missing")
	case c.Typ != "" && !strings.EqualFold(c.Typ, "ID"):
		return errors.New("typ is not ID")
	case len(c.Audience) > 1 && c.AZP == "":
		return errors.New("azp missing with several audiences")
	case c.AZP != "" && c.AZP != p.cfg.ClientID:
		return errors.New("azp is another client")
	case k.nonce == nonceMatches && want.nonce != "" &&
		subtle.ConstantTimeCompare([]byte(nonce), []byte(want.nonce)) != 1:
		return errors.New("nonce mismatch")
	}
	if atHash != "" {
		return checkATHash(v.jws.Alg, want.accessToken, atHash)
	}
	return nil
}

// checkIDTokenNames is idHintKind's check, and the first of idKind's: an
// ID token is read by names alone, so a member whose name only folds to a
// claim name ("EXP", "Sub", "ſub", as encoding/json would match it) is
// refused rather than ignored.
func checkIDTokenNames(_ *Plugin, _ *tokenKind, v verifiedJWT, _ *expected) error {
	return token.EachMember(nil, v.claims.Raw, func(name string, _ []byte) error {
		if known, folded := token.FoldedName(name); folded {
			return invalid("claim names are case-sensitive: "+name+" is not "+known, nil)
		}
		return nil
	})
}

// readIDTokenMembers returns the ID token members token.Claims does not
// hold as strings (nonce, at_hash), read from payload in one pass that
// also refuses folded claim names (see checkIDTokenNames), a nonce,
// at_hash, azp or typ that is not a string, and distributed claims naming
// a source that is not there.
func readIDTokenMembers(payload []byte) (nonce, atHash string, err error) {
	var names []string           // the sources _claim_names names
	sources := map[string]bool{} // the sources _claim_sources holds
	err = token.EachMember(nil, payload, func(name string, val []byte) error {
		if known, folded := token.FoldedName(name); folded {
			return invalid("claim names are case-sensitive: "+name+" is not "+known, nil)
		}
		if string(val) == "null" {
			return nil
		}
		switch name {
		case "nonce", "at_hash", "azp", "typ":
			s, ok := token.String(nil, val)
			if !ok {
				return invalid("malformed "+name+" claim", nil)
			}
			switch name {
			case "nonce":
				nonce = s
			case "at_hash":
				atHash = s
			}
		case "_claim_names":
			return token.EachMember(nil, val, func(_ string, src []byte) error {
				s, ok := token.String(nil, src)
				if !ok && string(src) != "null" {
					return invalid("malformed _claim_names claim", nil)
				}
				names = append(names, s)
				return nil
			})
		case "_claim_sources":
			return token.EachMember(nil, val, func(src string, s []byte) error {
				sources[src] = true
				if string(s) == "null" {
					return nil
				}
				return token.EachMember(nil, s, func(m string, mv []byte) error {
					if m == "endpoint" || m == "access_token" {
						if _, ok := token.String(nil, mv); !ok && string(mv) != "null" {
							return invalid("malformed _claim_sources claim", nil)
						}
					}
					return nil
				})
			})
		}
		return nil
	})
	if err != nil {
		return "", "", err
	}
	for _, src := range names {
		if src == "" || !sources[src] {
			return "", "", errors.New("a distributed claim names no source")
		}
	}
	return nonce, atHash, nil
}

// checkATHash checks an ID token's at_hash against the access token issued
// with it (OpenID Connect Core §3.1.3.8): the left half of the hash the
// ID token's alg uses, base64url-encoded.
func checkATHash(alg, accessToken, atHash string) error {
	var h hash.Hash
	switch alg {
	case "RS256", "ES256", "PS256":
		h = sha256.New()
	case "RS384", "ES384", "PS384":
		h = sha512.New384()
	case "RS512", "ES512", "PS512", "EdDSA":
		h = sha512.New()
	default:
		return fmt.Errorf("unsupported signing algorithm %q", alg)
	}
	h.Write([]byte(accessToken))
	sum := h.Sum(nil)[:h.Size()/2]
	if base64.RawURLEncoding.EncodeToString(sum) != atHash {
		return errors.New("access token hash does not match value in ID token")
	}
	return nil
}
