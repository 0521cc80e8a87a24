package idp

import (
	"context"
	"errors"
	"fmt"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

// keyStore is an issuer's JWKS store: jwkset's memory storage holding the
// keys of the last fetch (each fetch replaces them whole, see
// keySet.fetchCtx), which keyfunc reads. Only KeyRead is its own: a kid
// the store lacks goes through the key set's unknown-kid rule (one shared,
// rate-limited refetch, see keySet.unknownKID) before the store answers
// again.
type keyStore struct {
	*jwkset.MemoryJWKSet
	k *keySet
}

var _ jwkset.Storage = keyStore{}

// KeyRead returns the key kid; an unknown kid may cause one refetch
// (shared, rate-limited, negative-cached) and one more look.
func (s keyStore) KeyRead(ctx context.Context, kid string) (jwkset.JWK, error) {
	jwk, err := s.MemoryJWKSet.KeyRead(ctx, kid)
	if !errors.Is(err, jwkset.ErrKeyNotFound) {
		return jwk, err
	}
	if _, ok, err := s.k.unknownKID(ctx, kid); !ok {
		if err != nil {
			return jwkset.JWK{}, err
		}
		return jwkset.JWK{}, fmt.Errorf("%w: kid %q", jwkset.ErrKeyNotFound, kid)
	}
	return s.MemoryJWKSet.KeyRead(ctx, kid)
}

// openStore gives k its JWKS store and keyfunc's jwt.Keyfunc source over
// it.
func (k *keySet) openStore() error {
	k.store = jwkset.NewMemoryStorage()
	kf, err := keyfunc.New(keyfunc.Options{Storage: keyStore{MemoryJWKSet: k.store, k: k}})
	if err != nil {
		return err
	}
	k.kf = kf
	return nil
}

// selectKey is the one key-selection path, for every kind of token: the
// key of t's kid in the snapshot, else keyfunc (over the key store: an
// unknown kid may cause one refetch; see the top of jwks.go for why
// keyfunc serves only that); the JWK's own alg, when it has one, must be
// t's alg, and the key's type (and curve) must fit t's alg. A token without
// kid is offered every key that fits its alg. It returns the key (or a
// jwt.VerificationKeySet).
func (k *keySet) selectKey(ctx context.Context, snap *keySnapshot, t *token.JWS) (any, error) {
	if !t.HasKID {
		var set jwt.VerificationKeySet
		for _, vk := range snap.all {
			if algMatchesKey(t.Alg, vk) {
				set.Keys = append(set.Keys, vk.key)
			}
		}
		if len(set.Keys) == 0 {
			return nil, invalid("unknown signing key", errUnknownKID)
		}
		return set, nil
	}
	if vk, ok := snap.byKID[t.Kid]; ok {
		// The common case, without keyfunc's allocations per token: the
		// key keyfunc would read from the store, with the same check of
		// the JWK's own alg (in algMatchesKey). keyfunc handles the rest:
		// an unknown kid and its refetch.
		if !algMatchesKey(t.Alg, vk) {
			return nil, invalid("algorithm does not match the key", nil)
		}
		return vk.key, nil
	}
	tok := &jwt.Token{Header: map[string]any{"kid": t.Kid, "alg": t.Alg}}
	key, err := k.kf.KeyfuncCtx(ctx)(tok)
	switch {
	case errors.Is(err, errKeyWait):
		return nil, errKeyWait
	case errors.Is(err, errKeysUnreachable):
		return nil, errKeysUnreachable
	case errors.Is(err, ErrUnavailable):
		return nil, ErrUnavailable
	case errors.Is(err, jwkset.ErrKeyNotFound):
		return nil, invalid("unknown signing key", errUnknownKID)
	case err != nil:
		// keyfunc refuses a JWK whose own alg differs from the token's.
		return nil, invalid("algorithm does not match the key", err)
	}
	if !algMatchesKey(t.Alg, verifyKey{key: key}) {
		return nil, invalid("algorithm does not match the key", nil)
	}
	return key, nil
}
