package idp

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

// The token pipeline: every JWT this package verifies (access tokens, the
// login flow's ID tokens, back-channel logout tokens) goes through the
// same steps in the same order, in verifyJWT:
//
//  1. size (Config.MaxTokenBytes);
//  2. parse: token.ParseJWS, the strict compact-JWS parser;
//  3. the header's typ, against the kind's list;
//  4. route by the exact iss claim, before any signature work, to a
//     trusted issuer (access tokens: any; the others: the primary);
//  5. the issuer's keys: the snapshot of its one JWKS store (keySet),
//     the key chosen by selectKey, keyfunc serving unknown kids;
//  6. the signature, with one of the issuer's algorithms;
//  7. the claims, decoded once (exact names, each once);
//  8. the kind's own checks (tokenKind.check), reading its row.
//
// A kind of token is one row of the table below: what it requires beyond
// the shared steps. A new kind (a DPoP proof, the proxy's own assertions)
// is a new row.

// tokenKind is what one kind of JWT requires.
type tokenKind struct {
	name string
	// typs are the header typ values accepted, lower-cased; "" accepts a
	// header without typ; nil accepts any.
	typs      []string
	typReason string // the refusal of another typ
	// anyIssuer routes the token among every trusted issuer
	// (Config.Issuers); otherwise only the primary issuer's tokens pass.
	anyIssuer bool
	// missingIss is the refusal of a payload without an iss string.
	missingIss string
	// waitFirstKeys waits for the issuer's first key set
	// (Config.FirstKeysWait) instead of refusing at once (ErrUnavailable).
	waitFirstKeys bool
	// mapped decodes the claims with the issuer's claim mapping (and the
	// interner), for the User an access token becomes.
	mapped bool
	// audience is the audience rule.
	audience audienceRule
	// times are the rules on exp, nbf and iat (the lifetime).
	times tokenTimes
	// nonce is the rule on the nonce claim.
	nonce nonceRule
	// event is the member the events claim must hold, as an object; ""
	// for none.
	event string
	// bound: the token may be sender-constrained (cnf, typ DPoP): its
	// binding is kept on the Identity and checked against each request
	// that presents it (binding.go), whatever the DPoP mode. The other
	// kinds come from the provider, never from a client.
	bound bool
	// check applies the kind's claim rules (the fields above) to a token
	// through steps 1 to 7, in the kind's order.
	// (v by value: a pointer given to a function value escapes, and the
	// access path would allocate it).
	check func(p *Plugin, k *tokenKind, v verifiedJWT, want *expected) error
}

// audienceRule says whom a token must be intended for.
type audienceRule uint8

const (
	// audIssuer: aud (string or list) holds one of the issuer's
	// audiences, or azp is one of them (the specification's §5.4–5.6).
	audIssuer audienceRule = iota
	// audClient: aud holds Config.ClientID (the login's client).
	audClient
)

// nonceRule says what a token's nonce claim may be.
type nonceRule uint8

const (
	// nonceMarksIDToken: a nonce in a token declaring no type at all
	// marks an ID token, refused (Keycloak's access tokens may carry the
	// login's nonce, but with typ "Bearer").
	nonceMarksIDToken nonceRule = iota
	// nonceMatches: the nonce must be the login's (expected.nonce), when
	// one is expected.
	nonceMatches
	// nonceRefused: no nonce at all.
	nonceRefused
)

// The table of token kinds.
var (
	// accessKind: a bearer token (Verify, Middleware), of any trusted
	// issuer.
	accessKind = tokenKind{
		name:          "access token",
		typs:          []string{"", "jwt", "at+jwt", "application/jwt", "application/at+jwt"},
		typReason:     "not an access token",
		anyIssuer:     true,
		missingIss:    "missing required claim iss",
		waitFirstKeys: true,
		mapped:        true,
		audience:      audIssuer,
		times:         tokenTimes{needExp: true},
		nonce:         nonceMarksIDToken,
		bound:         true,
		check:         checkAccessToken,
	}
	// idKind: the login flow's ID token (OpenID Connect Core §3.1.3.7).
	idKind = tokenKind{
		name:       "ID token",
		missingIss: "wrong issuer",
		audience:   audClient,
		times:      tokenTimes{needExp: true, needIat: true},
		nonce:      nonceMatches,
		check:      checkIDToken,
	}
	// idHintKind: an ID token kept only as the logout's id_token_hint
	// (a session's, after a refresh): its issuer (the primary), signature
	// and claim names are checked, nothing else.
	idHintKind = tokenKind{
		name:       "ID token (hint)",
		missingIss: "wrong issuer",
		check:      checkIDTokenNames,
	}
	// logoutKind: a back-channel logout token (OpenID Connect
	// Back-Channel Logout 1.0 §2.6).
	logoutKind = tokenKind{
		name:       "logout token",
		typs:       []string{"", "jwt", "logout+jwt", "application/logout+jwt"},
		typReason:  "not a logout token (typ)",
		missingIss: "wrong issuer",
		audience:   audClient,
		times:      tokenTimes{needIat: true, maxAge: maxLogoutTokenAge},
		nonce:      nonceRefused,
		event:      backchannelLogoutEvent,
		check:      checkLogoutToken,
	}
)

// verifiedJWT is a token through the pipeline.
type verifiedJWT struct {
	jws    *token.JWS
	is     *issuer
	claims *token.Claims
	now    time.Time
	// waited: the first key set arrived while the token waited for it;
	// gen is then the key generation, read again before the key set (the
	// one the caller read before is older).
	waited bool
	gen    uint64
}

// expected is what the caller knows a token must carry: the login's
// nonce and the access token issued with an ID token (at_hash).
type expected struct {
	nonce, accessToken string
}

// verifyJWT runs raw through the pipeline as a token of kind k at now.
// sum is the SHA-256 of raw's signing input when the caller has it (the
// verified-token cache's key), else nil.
func (p *Plugin) verifyJWT(ctx context.Context, k *tokenKind, raw string, now time.Time, want *expected, sum *[32]byte) (verifiedJWT, error) {
	var v verifiedJWT
	if len(raw) > p.cfg.MaxTokenBytes {
		return v, errTokenTooLarge
	}
	t, err := token.ParseJWS(raw)
	if err != nil {
		return v, err
	}
	if k.typs != nil && !slices.Contains(k.typs, lowerTyp(t.Typ)) {
		return v, invalid(k.typReason, nil)
	}
	is, err := p.route(t.Payload, k)
	if err != nil {
		return v, err
	}
	snap := is.keys.current()
	if snap == nil {
		if !k.waitFirstKeys {
			return v, ErrUnavailable
		}
		if err := is.keys.awaitFirst(ctx, p.cfg.FirstKeysWait); err != nil {
			return v, err
		}
		v.waited, v.gen = true, p.gen.Load()
		snap = is.keys.current()
	}
	if err := p.verifySignature(ctx, is, snap, t, sum); err != nil {
		return v, err
	}
	var c *token.Claims
	if k.mapped {
		c, err = p.decodeClaims(is, t.Payload)
	} else {
		c, err = token.DecodeClaims(nil, t.Payload)
	}
	if err != nil {
		return v, err
	}
	v.jws, v.is, v.claims, v.now = t, is, c, now
	if err := k.check(p, k, v, want); err != nil {
		return v, err
	}
	return v, nil
}

// lowerTyp lower-cases a header typ ("JWT", the usual one, without
// allocating).
func lowerTyp(typ string) string {
	if typ == "JWT" {
		return "jwt"
	}
	return strings.ToLower(typ)
}

// verifySignature checks t's signature with the key the header selects
// (see selectKey) among the keys of the issuer is, with one of is's
// algorithms. sum, when not nil, is the SHA-256 of t's signing input.
func (p *Plugin) verifySignature(ctx context.Context, is *issuer, snap *keySnapshot, t *token.JWS, sum *[32]byte) error {
	method, ok := is.methods[t.Alg]
	if !ok {
		return invalid("unsupported algorithm", nil)
	}
	key, err := is.keys.selectKey(ctx, snap, t)
	if err != nil {
		return err
	}
	if set, ok := key.(jwt.VerificationKeySet); ok {
		for _, k := range set.Keys {
			if verifyWith(method, t, k, sum) == nil {
				return nil
			}
		}
		return invalid("invalid signature", nil)
	}
	if err := verifyWith(method, t, key, sum); err != nil {
		return invalid("invalid signature", err)
	}
	return nil
}

// audienceOK applies the rule r to c's audience for the issuer is.
func (p *Plugin) audienceOK(r audienceRule, is *issuer, c *token.Claims) bool {
	if r == audClient {
		return contains(c.Audience, p.cfg.ClientID)
	}
	for _, a := range c.Audience {
		if _, ok := is.audiences[a]; ok {
			return true
		}
	}
	if c.AZP != "" {
		if _, ok := is.audiences[c.AZP]; ok {
			return true
		}
	}
	return false
}

// hasEvent reports whether the events claim of payload holds event as an
// object.
func hasEvent(payload []byte, event string) bool {
	found := false
	_ = token.EachMember(nil, payload, func(name string, v []byte) error {
		if name == "events" {
			_ = token.EachMember(nil, v, func(ev string, val []byte) error {
				if ev == event && len(val) > 0 && val[0] == '{' {
					found = true
				}
				return nil
			})
		}
		return nil
	})
	return found
}
