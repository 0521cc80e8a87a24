package idp

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/golang-jwt/jwt/v5"
)

// oidcKeySet is an oidc.KeySet over the plugin's own key cache, so that ID
// tokens in the login flow and access tokens are verified with the same
// keys, fetched once, under the same unknown-kid refetch rule.
type oidcKeySet struct {
	p      *Plugin
	parser *jwt.Parser
}

var _ oidc.KeySet = (*oidcKeySet)(nil)

func newOIDCKeySet(p *Plugin) *oidcKeySet {
	return &oidcKeySet{
		p: p,
		// Only the signature is checked here; go-oidc and the callback check
		// the claims.
		parser: jwt.NewParser(jwt.WithValidMethods(p.cfg.Algorithms), jwt.WithoutClaimsValidation()),
	}
}

// VerifySignature checks the signature of the compact JWS raw with a key
// of the provider's JWKS whose kid and algorithm fit, and returns the
// payload. An unknown kid causes at most one (shared, rate-limited) refetch
// of the key set, as for access tokens.
func (k *oidcKeySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	if len(raw) > k.p.cfg.MaxTokenBytes {
		return nil, fmt.Errorf("idp: id token: %w", invalid("token too large", nil))
	}
	snap := k.p.keys.current()
	if snap == nil {
		return nil, ErrUnavailable
	}
	_, err := k.parser.Parse(raw, func(t *jwt.Token) (any, error) {
		return k.keyFor(ctx, snap, t)
	})
	if err != nil {
		return nil, fmt.Errorf("idp: id token: %w", classify(err))
	}
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("idp: id token: %w", invalid("malformed token", nil))
	}
	payload, err := k.parser.DecodeSegment(parts[1])
	if err != nil {
		return nil, fmt.Errorf("idp: id token: %w", invalid("malformed token", err))
	}
	return payload, nil
}

// keyFor picks the verification key for t from snap, refetching the key
// set once when t's kid is unknown.
func (k *oidcKeySet) keyFor(ctx context.Context, snap *keySnapshot, t *jwt.Token) (any, error) {
	if _, ok := t.Header["crit"]; ok {
		return nil, invalid("unsupported critical header", nil)
	}
	alg := t.Method.Alg()
	kidv, hasKID := t.Header["kid"]
	if !hasKID {
		var set jwt.VerificationKeySet
		for _, vk := range snap.all {
			if algMatchesKey(alg, vk) {
				set.Keys = append(set.Keys, vk.key)
			}
		}
		if len(set.Keys) == 0 {
			return nil, errUnknownKID
		}
		return set, nil
	}
	kid, ok := kidv.(string)
	if !ok || kid == "" {
		return nil, invalid("malformed kid header", nil)
	}
	vk, found := snap.byKID[kid]
	if !found {
		k.p.keys.refreshUnknownKID(ctx)
		if vk, found = k.p.keys.current().byKID[kid]; !found {
			return nil, errUnknownKID
		}
	}
	if !algMatchesKey(alg, vk) {
		return nil, invalid("algorithm does not match the key", nil)
	}
	return vk.key, nil
}

// verifyIDToken checks an ID token: go-oidc's verifier checks the signature
// (with our key cache), issuer, audience (contains ClientID) and expiry;
// then sub and iat present, iat not in the future, typ "ID" when present,
// azp (required with several audiences, equal to ClientID when present),
// the nonce when wantNonce is set, and at_hash when present.
func (a *authRoutes) verifyIDToken(ctx context.Context, raw, wantNonce, accessToken string) error {
	t, err := a.verifier.Verify(ctx, raw)
	if err != nil {
		return fmt.Errorf("idp: id token: %w", err)
	}
	var extra struct {
		AZP string `json:"azp"`
		Typ string `json:"typ"`
	}
	if err := t.Claims(&extra); err != nil {
		return fmt.Errorf("idp: id token: %w", err)
	}
	switch {
	case t.Subject == "":
		return errors.New("idp: id token: sub missing")
	case t.IssuedAt.IsZero():
		return errors.New("idp: id token: iat missing")
	case t.IssuedAt.After(a.cfg.Now().Add(a.cfg.Leeway)):
		return errors.New("idp: id token: issued in the future")
	case extra.Typ != "" && !strings.EqualFold(extra.Typ, "ID"):
		return errors.New("idp: id token: typ is not ID")
	case len(t.Audience) > 1 && extra.AZP == "":
		return errors.New("idp: id token: azp missing with several audiences")
	case extra.AZP != "" && extra.AZP != a.cfg.ClientID:
		return errors.New("idp: id token: azp is another client")
	case wantNonce != "" && subtle.ConstantTimeCompare([]byte(t.Nonce), []byte(wantNonce)) != 1:
		return errors.New("idp: id token: nonce mismatch")
	}
	if t.AccessTokenHash != "" {
		if err := t.VerifyAccessToken(accessToken); err != nil {
			return fmt.Errorf("idp: id token: %w", err)
		}
	}
	return nil
}
