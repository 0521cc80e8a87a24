package idp

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

// oidcKeySet is an oidc.KeySet over the plugin's own key cache, so that ID
// tokens in the login flow and access tokens are verified with the same
// keys, fetched once, selected by the same code (Plugin.selectKey) under
// the same unknown-kid rule.
type oidcKeySet struct{ p *Plugin }

var _ oidc.KeySet = (*oidcKeySet)(nil)

func newOIDCKeySet(p *Plugin) *oidcKeySet { return &oidcKeySet{p: p} }

// VerifySignature checks the signature of the compact JWS raw and returns
// its payload. go-oidc and the callback check the claims; since go-oidc
// reads them with encoding/json, which matches names case-insensitively
// (with Unicode folding: "ſub" is "sub" to it), the payload is first held
// to the rules access tokens follow (token.DecodeClaims: exact names, each
// once, exp, nbf and iat numbers), and a member whose name only folds to a
// claim name ("EXP", "Sub") is refused rather than read as that claim.
func (k *oidcKeySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	if len(raw) > k.p.cfg.MaxTokenBytes {
		return nil, fmt.Errorf("idp: id token: %w", invalid("token too large", nil))
	}
	snap := k.p.keys.current()
	if snap == nil {
		return nil, ErrUnavailable
	}
	t, err := token.ParseJWS(raw)
	if err != nil {
		return nil, fmt.Errorf("idp: id token: %w", err)
	}
	if _, err := k.p.verifySignature(ctx, k.p.primary, snap, t); err != nil {
		return nil, fmt.Errorf("idp: id token: %w", err)
	}
	if _, err := token.DecodeClaims(nil, t.Payload); err != nil {
		return nil, fmt.Errorf("idp: id token: %w", err)
	}
	err = token.EachMember(nil, t.Payload, func(name string, _ []byte) error {
		if known, folded := token.FoldedName(name); folded {
			return invalid("claim names are case-sensitive: "+name+" is not "+known, nil)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("idp: id token: %w", err)
	}
	return t.Payload, nil
}

// verifyIDToken checks an ID token: go-oidc's verifier checks the signature
// (with our key cache), issuer and audience (contains ClientID); exp
// (required), nbf and iat (required, not in the future) are checked as
// for access tokens (checkTimes: go-oidc reads them through int64, where
// a date past 2^63 seconds overflows into the far past); then sub
// present, typ "ID" when present, azp (required with several audiences,
// equal to ClientID when present), the nonce when wantNonce is set, and
// at_hash when present.
func (a *authRoutes) verifyIDToken(ctx context.Context, raw, wantNonce, accessToken string) error {
	t, err := a.verifier.Verify(ctx, raw)
	if err != nil {
		return fmt.Errorf("idp: id token: %w", err)
	}
	var payload json.RawMessage
	if err := t.Claims(&payload); err != nil {
		return fmt.Errorf("idp: id token: %w", err)
	}
	c, err := token.DecodeClaims(nil, payload)
	if err != nil {
		return fmt.Errorf("idp: id token: %w", err)
	}
	if err := a.p.checkTimes(c, a.cfg.Now(), tokenTimes{needExp: true, needIat: true}); err != nil {
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
