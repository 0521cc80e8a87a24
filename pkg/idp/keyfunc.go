package idp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

// keyStorage is a read-only jwkset.Storage over the plugin's key cache:
// keyfunc reads keys through it, and a read of an unknown kid goes through
// the cache's unknown-kid rule (see keySet.unknownKID) before it answers
// jwkset.ErrKeyNotFound.
type keyStorage struct{ k *keySet }

var _ jwkset.Storage = keyStorage{}

var errReadOnly = errors.New("idp: the key storage is read-only: keys come from the provider's JWKS")

// KeyRead returns the key kid of the current snapshot; an unknown kid may
// cause one refetch (shared, rate-limited, negative-cached) and one more
// look.
func (s keyStorage) KeyRead(ctx context.Context, kid string) (jwkset.JWK, error) {
	snap := s.k.current()
	if snap == nil {
		return jwkset.JWK{}, ErrUnavailable
	}
	if vk, ok := snap.byKID[kid]; ok {
		return vk.jwk, nil
	}
	vk, ok, err := s.k.unknownKID(ctx, kid)
	if ok {
		return vk.jwk, nil
	}
	if err != nil {
		return jwkset.JWK{}, err
	}
	return jwkset.JWK{}, fmt.Errorf("%w: kid %q", jwkset.ErrKeyNotFound, kid)
}

// KeyReadAll returns every key of the current snapshot.
func (s keyStorage) KeyReadAll(context.Context) ([]jwkset.JWK, error) {
	snap := s.k.current()
	if snap == nil {
		return nil, ErrUnavailable
	}
	out := make([]jwkset.JWK, len(snap.all))
	for i, vk := range snap.all {
		out[i] = vk.jwk
	}
	return out, nil
}

// KeyDelete refuses: the storage mirrors the provider.
func (keyStorage) KeyDelete(context.Context, string) (bool, error) { return false, errReadOnly }

// KeyReplaceAll refuses: the storage mirrors the provider.
func (keyStorage) KeyReplaceAll(context.Context, []jwkset.JWK) error { return errReadOnly }

// KeyWrite refuses: the storage mirrors the provider.
func (keyStorage) KeyWrite(context.Context, jwkset.JWK) error { return errReadOnly }

// JSON returns the public JWKS of the snapshot.
func (s keyStorage) JSON(ctx context.Context) (json.RawMessage, error) { return s.JSONPublic(ctx) }

// JSONPublic returns the public JWKS of the snapshot.
func (s keyStorage) JSONPublic(ctx context.Context) (json.RawMessage, error) {
	return s.JSONWithOptions(ctx, jwkset.JWKMarshalOptions{}, jwkset.JWKValidateOptions{})
}

// JSONPrivate returns the public JWKS: the provider publishes no private
// material, and none is kept.
func (s keyStorage) JSONPrivate(ctx context.Context) (json.RawMessage, error) {
	return s.JSONPublic(ctx)
}

// JSONWithOptions returns the JWKS of the snapshot.
func (s keyStorage) JSONWithOptions(ctx context.Context, mo jwkset.JWKMarshalOptions, vo jwkset.JWKValidateOptions) (json.RawMessage, error) {
	m, err := s.MarshalWithOptions(ctx, mo, vo)
	if err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// Marshal returns the snapshot as a JWKS document.
func (s keyStorage) Marshal(ctx context.Context) (jwkset.JWKSMarshal, error) {
	return s.MarshalWithOptions(ctx, jwkset.JWKMarshalOptions{}, jwkset.JWKValidateOptions{})
}

// MarshalWithOptions returns the snapshot as a JWKS document.
func (s keyStorage) MarshalWithOptions(ctx context.Context, _ jwkset.JWKMarshalOptions, _ jwkset.JWKValidateOptions) (jwkset.JWKSMarshal, error) {
	keys, err := s.KeyReadAll(ctx)
	if err != nil {
		return jwkset.JWKSMarshal{}, err
	}
	var m jwkset.JWKSMarshal
	for _, k := range keys {
		m.Keys = append(m.Keys, k.Marshal())
	}
	return m, nil
}

// newKeyfunc builds keyfunc's jwt.Keyfunc source over the key cache.
func newKeyfunc(k *keySet) (keyfunc.Keyfunc, error) {
	return keyfunc.New(keyfunc.Options{Storage: keyStorage{k: k}})
}

// selectKey is the one key-selection path, for access tokens, logout
// tokens and the login flow's ID tokens: the key of t's kid in the
// snapshot, else keyfunc (over the key cache: an unknown kid may cause one
// refetch; see the top of jwks.go for why keyfunc serves only that); the
// JWK's own alg, when it has one, must be t's alg, and the key's type (and
// curve) must fit t's alg. A token without kid is offered every key that fits
// its alg. It returns the key (or a jwt.VerificationKeySet) and the
// snapshot it came from.
func (is *issuer) selectKey(ctx context.Context, snap *keySnapshot, t *token.JWS) (any, *keySnapshot, error) {
	if !t.HasKID {
		var set jwt.VerificationKeySet
		for _, vk := range snap.all {
			if algMatchesKey(t.Alg, vk) {
				set.Keys = append(set.Keys, vk.key)
			}
		}
		if len(set.Keys) == 0 {
			return nil, snap, invalid("unknown signing key", errUnknownKID)
		}
		return set, snap, nil
	}
	if vk, ok := snap.byKID[t.Kid]; ok {
		// The common case, without keyfunc's allocations per token: the
		// key keyfunc would read from keyStorage, with the same check of
		// the JWK's own alg (in algMatchesKey). keyfunc handles the rest:
		// an unknown kid and its refetch.
		if !algMatchesKey(t.Alg, vk) {
			return nil, snap, invalid("algorithm does not match the key", nil)
		}
		return vk.key, snap, nil
	}
	tok := &jwt.Token{Header: map[string]any{"kid": t.Kid, "alg": t.Alg}}
	key, err := is.kf.KeyfuncCtx(ctx)(tok)
	switch {
	case errors.Is(err, errKeyWait):
		return nil, snap, errKeyWait
	case errors.Is(err, errKeysUnreachable):
		return nil, snap, errKeysUnreachable
	case errors.Is(err, ErrUnavailable):
		return nil, snap, ErrUnavailable
	case errors.Is(err, jwkset.ErrKeyNotFound):
		return nil, snap, invalid("unknown signing key", errUnknownKID)
	case err != nil:
		// keyfunc refuses a JWK whose own alg differs from the token's.
		return nil, snap, invalid("algorithm does not match the key", err)
	}
	cur := is.keys.current()
	if !algMatchesKey(t.Alg, verifyKey{key: key}) {
		return nil, cur, invalid("algorithm does not match the key", nil)
	}
	return key, cur, nil
}
