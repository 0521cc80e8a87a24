package idp

import (
	"context"
	"errors"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// errUnknownKID: the token's kid is not in the key set, even after the one
// refetch it may cause.
var errUnknownKID = errors.New("unknown signing key")

// Verify checks raw as an access token of the realm: size, signature with a
// key of the provider's JWKS, algorithm, issuer, exp (required), nbf and
// iat, token type, and the audience rule. It returns the verified claims,
// or an error wrapping ErrNoToken (raw is empty), ErrInvalidToken, or
// ErrUnavailable (the keys are not loaded yet).
func (p *Plugin) Verify(ctx context.Context, raw string) (*TokenPayload, error) {
	id, err := p.verify(ctx, raw)
	if err != nil {
		return nil, err
	}
	return id.payload, nil
}

func (p *Plugin) verify(ctx context.Context, raw string) (*identity, error) {
	if raw == "" {
		return nil, ErrNoToken
	}
	if len(raw) > p.cfg.MaxTokenBytes {
		return nil, invalid("token too large", nil)
	}
	snap := p.keys.current()
	if snap == nil {
		return nil, ErrUnavailable
	}
	now := p.cfg.Now()
	if id := p.cache.get(raw, now, snap.gen); id != nil {
		return id, nil
	}

	var c claims
	used := snap // the snapshot whose key verified the token
	tok, err := p.parser.ParseWithClaims(raw, &c, func(t *jwt.Token) (any, error) {
		var key any
		var err error
		key, used, err = p.keyFor(ctx, snap, t)
		return key, err
	})
	if err != nil {
		return nil, classify(err)
	}
	if err := p.checkClaims(&c, isATJWT(tok.Header)); err != nil {
		return nil, err
	}
	id := &identity{raw: raw, payload: c.payload(), user: c.user()}
	p.cache.put(raw, id, c.ExpiresAt.Time, now, used.gen)
	return id, nil
}

// keyFor is the jwt.Keyfunc: it picks the verification key for t. The
// parser has already checked that t's alg is one of Config.Algorithms.
func (p *Plugin) keyFor(ctx context.Context, snap *keySnapshot, t *jwt.Token) (any, *keySnapshot, error) {
	if _, ok := t.Header["crit"]; ok {
		return nil, snap, invalid("unsupported critical header", nil)
	}
	if typ, ok := t.Header["typ"]; ok {
		s, _ := typ.(string)
		switch strings.ToLower(strings.TrimPrefix(strings.ToLower(s), "application/")) {
		case "jwt", "at+jwt":
		default:
			return nil, snap, invalid("not an access token", nil)
		}
	}
	alg := t.Method.Alg()
	kidv, hasKID := t.Header["kid"]
	if !hasKID {
		// No kid: offer the parser every key that fits the algorithm.
		var set jwt.VerificationKeySet
		for _, k := range snap.all {
			if algMatchesKey(alg, k) {
				set.Keys = append(set.Keys, k.key)
			}
		}
		if len(set.Keys) == 0 {
			return nil, snap, errUnknownKID
		}
		return set, snap, nil
	}
	kid, ok := kidv.(string)
	if !ok || kid == "" {
		return nil, snap, invalid("malformed kid header", nil)
	}
	k, found := snap.byKID[kid]
	if !found {
		// Possibly a key rotation: one refetch (shared and rate-limited),
		// then one more look.
		p.keys.refreshUnknownKID(ctx)
		snap = p.keys.current()
		if k, found = snap.byKID[kid]; !found {
			return nil, snap, errUnknownKID
		}
	}
	if !algMatchesKey(alg, k) {
		return nil, snap, invalid("algorithm does not match the key", nil)
	}
	return k.key, snap, nil
}

// checkClaims applies the rules the JWT parser does not know: token type
// and the audience rule. atJWT tells that the header declared an RFC 9068
// access token (typ "at+jwt").
func (p *Plugin) checkClaims(c *claims, atJWT bool) error {
	// Keycloak marks its tokens: "Bearer" for access tokens, "ID", "Refresh",
	// "Offline", "Logout" for the others, none of which may pass here.
	if c.Typ != "" && !strings.EqualFold(string(c.Typ), "Bearer") {
		return invalid("not an access token", nil)
	}
	// Most other providers leave typ out, and an ID token's aud is the
	// client ID, so the audience rule alone would let one pass. ID tokens
	// are recognised by what only they carry: at_hash or c_hash, or a
	// nonce in a token that declares no type at all. (Keycloak's access
	// tokens may carry the login's nonce, but always with typ "Bearer".)
	if c.AtHash != nil || c.CHash != nil || (c.Nonce != nil && c.Typ == "" && !atJWT) {
		return invalid("not an access token (an ID token)", nil)
	}
	if c.Subject == "" {
		return invalid("missing subject", nil)
	}
	if !p.audienceOK(c) {
		return invalid("token not intended for this service", nil)
	}
	return nil
}

// isATJWT reports whether a JOSE header declares an RFC 9068 JWT access
// token.
func isATJWT(h map[string]any) bool {
	s, _ := h["typ"].(string)
	return strings.EqualFold(strings.TrimPrefix(strings.ToLower(s), "application/"), "at+jwt")
}

// audienceOK is the specification's audience rule (§5.4–5.6): aud (string
// or list) holds the primary audience or an optional one, or azp is one of
// them.
func (p *Plugin) audienceOK(c *claims) bool {
	for _, a := range c.Audience {
		if _, ok := p.audiences[a]; ok {
			return true
		}
	}
	if c.AZP != "" {
		if _, ok := p.audiences[string(c.AZP)]; ok {
			return true
		}
	}
	return false
}

// classify maps parser errors onto our sentinels with a client-safe reason.
func classify(err error) error {
	var te *tokenError
	switch {
	case errors.As(err, &te):
		return te
	case errors.Is(err, ErrUnavailable):
		return ErrUnavailable
	case errors.Is(err, errUnknownKID):
		return invalid("unknown signing key", err)
	case errors.Is(err, jwt.ErrTokenExpired):
		return invalid("token expired", err)
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return invalid("token not yet valid", err)
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return invalid("missing required claim", err)
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return invalid("wrong issuer", err)
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return invalid("invalid signature", err)
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return invalid("unsupported algorithm or key", err)
	default:
		return invalid("malformed token", err)
	}
}

// newParser builds the JWT parser for cfg; it is safe for concurrent use.
func newParser(cfg Config, issuer string) *jwt.Parser {
	return jwt.NewParser(
		jwt.WithValidMethods(cfg.Algorithms),
		jwt.WithIssuer(issuer),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(cfg.Leeway),
		jwt.WithTimeFunc(cfg.Now),
	)
}
