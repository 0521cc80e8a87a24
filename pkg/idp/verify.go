package idp

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

// errUnknownKID: the token's kid is not in the key set, even after the one
// refetch it may cause.
var errUnknownKID = errors.New("unknown signing key")

// Verify checks raw as an access token of the realm: size, canonical
// compact form, signature with a key of the provider's JWKS, algorithm,
// issuer, exp (required), nbf and iat, token type, and the audience rule.
// It returns the verified claims, or an error wrapping ErrNoToken (raw is
// empty), ErrInvalidToken, or ErrUnavailable (the keys are not loaded
// yet).
func (p *Plugin) Verify(ctx context.Context, raw string) (*TokenPayload, error) {
	id, err := p.VerifyIdentity(ctx, raw)
	if err != nil {
		return nil, err
	}
	return id.Payload, nil
}

// VerifyIdentity is Verify returning the whole Identity: the claims and
// the User the claim mapping reads from them. The Identity is shared
// between calls with the same token: treat it as read-only.
//
// raw is judged as a bearer token presented without proof or certificate
// (Config.DPoP.Mode applies): a sender-constrained token is refused with
// a PossessionError; VerifyPresentation checks its binding.
func (p *Plugin) VerifyIdentity(ctx context.Context, raw string) (*Identity, error) {
	id, err := p.verify(ctx, raw)
	if err != nil {
		return nil, err
	}
	if !boundOK(id, false, p.cfg.DPoP.Mode) {
		if err := p.checkPossession(ctx, id, &Presentation{Token: raw, Mode: p.cfg.DPoP.Mode}); err != nil {
			return nil, err
		}
	}
	return id, nil
}

// errTokenTooLarge: the token is longer than Config.MaxTokenBytes.
var errTokenTooLarge = invalid("token too large", nil)

// probe is a token's first step through verification: the checks that
// need no parsing (not empty, not too large, keys loaded) and the look-up
// in the hot table, done once per request. Authorize probes a token before
// checking its syntax (a hit was checked when it was verified) and, on a
// miss, verifies it with the same probe.
type probe struct {
	raw  string
	err  error  // why raw cannot be verified; reported after the syntax check
	gen  uint64 // the generation of the key material raw is verified under
	now  time.Time
	slot *atomic.Pointer[hotEntry] // raw's slot in the hot table (nil without a cache)
	// cached is set by verifyMiss when the verified-token cache served raw.
	cached bool
}

// probe checks raw's size and the keys and returns the Identity the hot
// table holds for raw; on a miss it returns nil and fills in pr for
// verifyMiss.
func (p *Plugin) probe(raw string, pr *probe) *Identity {
	switch {
	case raw == "":
		pr.err = ErrNoToken
		return nil
	case len(raw) > p.cfg.MaxTokenBytes:
		pr.err = errTokenTooLarge
		return nil
	}
	// The generation is read before any key set (verifyMiss): a token
	// verified with keys that have changed since is cached under an older
	// generation, which the cache no longer serves.
	gen := p.gen.Load()
	if p.byURL == nil && p.keys.current() == nil && !p.keys.firstPending() {
		// The first fetch failed: refused at once. While it is under
		// way, verifyMiss waits for it; with several issuers, it waits
		// per issuer.
		pr.err = ErrUnavailable
		return nil
	}
	now := p.cfg.Now()
	id, slot := p.cache.lookup(raw, now, gen)
	if id == nil {
		*pr = probe{raw: raw, gen: gen, now: now, slot: slot}
	}
	return id
}

// verify is Verify's path: a cache hit costs a hash and a look-up; a miss
// costs one parse of the token (claims decoded once, exact names), the
// signature check and the claim rules.
func (p *Plugin) verify(ctx context.Context, raw string) (*Identity, error) {
	var pr probe
	if id := p.probe(raw, &pr); id != nil {
		return id, nil
	}
	return p.verifyMiss(ctx, &pr)
}

// verifyMiss finishes the verification of a token the hot table does not
// hold: the shards' answer, else the whole work.
func (p *Plugin) verifyMiss(ctx context.Context, pr *probe) (*Identity, error) {
	if pr.err != nil {
		return nil, pr.err
	}
	raw, gen, now := pr.raw, pr.gen, pr.now
	if p.byURL == nil && p.keys.current() == nil {
		// The first key set is on its way (once its fetch has failed,
		// probe refuses at once): wait for it before judging the token,
		// so that a request during the first fetch gets the answer one
		// after it would, whatever the token.
		if err := p.keys.awaitFirst(ctx, p.cfg.FirstKeysWait); err != nil {
			return nil, err
		}
		gen = p.gen.Load()
	}
	key := cacheKey{hot: pr.slot}
	if payload, exp := p.cache.get(raw, &key, now, gen); payload != nil {
		// Verified before: only the claims are decoded again (they
		// decoded and passed every check then; time only moves on, and
		// the cache never serves at or past exp).
		if is := p.issuerOfPayload(payload); is != nil {
			if c, err := p.decodeClaims(is, payload); err == nil {
				id := &Identity{Raw: raw, Payload: payloadOf(c), User: userOf(c, is.name), cnf: confirmationOf(&accessKind, c).withATH(raw)}
				p.cache.promote(key, id, exp, gen)
				pr.cached = true
				return id, nil
			}
		}
	}
	v, err := p.verifyJWT(ctx, &accessKind, raw, now, nil, key.signingSum())
	if err != nil {
		return nil, err
	}
	if v.waited {
		gen = v.gen
	}
	c, is := v.claims, v.is
	id := &Identity{Raw: raw, Payload: payloadOf(c), User: userOf(c, is.name), cnf: confirmationOf(&accessKind, c).withATH(raw)}
	p.cache.put(key, id, token.NumericTime(c.Exp), now, gen)
	return id, nil
}

// decodeClaims decodes an access token's claims with the claim mapping
// of its issuer.
func (p *Plugin) decodeClaims(is *issuer, payload []byte) (*token.Claims, error) {
	if is.mapping == nil {
		return token.DecodeClaims(p.intern, payload)
	}
	return token.DecodeMapped(p.intern, payload, is.mapping)
}

// checkAccessToken is accessKind's check: the lifetime, then the rules
// on the issuer, the token type and the audience.
func checkAccessToken(p *Plugin, k *tokenKind, v verifiedJWT, _ *expected) error {
	if err := p.checkTimes(v.claims, v.now, k.times); err != nil {
		return err
	}
	return p.checkClaims(k, v.is, v.claims, v.jws.IsATJWT())
}

// checkClaims applies k's rules on the issuer, the token type and the
// audience of is (a token's binding is checked per request: binding.go). atJWT tells that the header
// declared an RFC 9068 access token (typ "at+jwt").
func (p *Plugin) checkClaims(k *tokenKind, is *issuer, c *token.Claims, atJWT bool) error {
	if c.Issuer == "" {
		return invalid("missing required claim iss", nil)
	}
	if c.Issuer != is.url {
		return invalid("wrong issuer", nil)
	}
	// Keycloak marks its tokens: "Bearer" for access tokens ("DPoP" for
	// DPoP-bound ones, whose binding binding.go checks), "ID", "Refresh", "Offline",
	// "Logout" for the others, none of which may pass here.
	if c.Typ != "" && !strings.EqualFold(c.Typ, "Bearer") && !strings.EqualFold(c.Typ, "DPoP") {
		return invalid("not an access token", nil)
	}
	// Most other providers leave typ out, and an ID token's aud is the
	// client ID, so the audience rule alone would let one pass. ID tokens
	// are recognised by what only they carry: at_hash or c_hash, or a
	// nonce in a token that declares no type at all. (Keycloak's access
	// tokens may carry the login's nonce, but always with typ "Bearer".)
	if c.ATHash || c.CHash || (k.nonce == nonceMarksIDToken && c.Nonce && c.Typ == "" && !atJWT) {
		return invalid("not an access token (an ID token)", nil)
	}
	if c.Subject == "" {
		return invalid("missing subject", nil)
	}
	if !p.audienceOK(k.audience, is, c) {
		return invalid("token not intended for this service", nil)
	}
	return nil
}

// signingMethods returns the JWS verifiers of the configured algorithms.
func signingMethods(algs []string) map[string]jwt.SigningMethod {
	m := make(map[string]jwt.SigningMethod, len(algs))
	for _, a := range algs {
		if sm := jwt.GetSigningMethod(a); sm != nil && supportedAlgorithms[a] {
			m[a] = sm
		}
	}
	return m
}
