package idptest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"math/big"
	"net/http"

	"github.com/idp-proxy/idp-proxy/internal/jsondoc"
)

// KID returns the key IDs of the current RS256 and ES256 signing keys.
func (s *Server) KID() (rs256, es256 string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rsaKID, s.ecKID
}

// RSAPublicKey returns the current RS256 public key.
func (s *Server) RSAPublicKey() *rsa.PublicKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &s.rsaKey.PublicKey
}

// RotateKey replaces both signing keys with new ones under new kids. The
// old keys disappear from the JWKS, as after a rotation whose grace period
// has ended.
func (s *Server) RotateKey() {
	s.mu.Lock()
	err := s.rotateLocked()
	s.mu.Unlock()
	if err != nil {
		s.fail("%v", err)
	}
}

// PublishJWK adds a raw JWK to the JWKS document as is (for tests of
// malformed or unusual keys).
func (s *Server) PublishJWK(jwk map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.extra = append(s.extra, jwk)
}

func (s *Server) rotateLocked() error {
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("idptest: %w", err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("idptest: %w", err)
	}
	s.rsaKey, s.rsaKID = rk, randomHex(8)
	s.ecKey, s.ecKID = ek, randomHex(8)
	return nil
}

func (s *Server) jwks(w http.ResponseWriter, r *http.Request) {
	s.jwksFetches.Add(1)
	s.mu.Lock()
	keys := []map[string]any{
		rsaJWK(&s.rsaKey.PublicKey, s.rsaKID, "sig", "RS256"),
		ecJWK(&s.ecKey.PublicKey, s.ecKID),
		rsaJWK(&s.encKey.PublicKey, "enc-"+s.rsaKID, "enc", "RSA-OAEP"),
	}
	keys = append(keys, s.extra...)
	s.mu.Unlock()
	jsondoc.Write(w, http.StatusOK, map[string]any{"keys": keys}, jsondoc.Options{})
}

func rsaJWK(k *rsa.PublicKey, kid, use, alg string) map[string]any {
	return map[string]any{
		"kid": kid, "kty": "RSA", "alg": alg, "use": use,
		"n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes()),
	}
}

func ecJWK(k *ecdsa.PublicKey, kid string) map[string]any {
	b, err := k.Bytes() // uncompressed point: 0x04 || X || Y
	if err != nil {
		panic("idptest: " + err.Error())
	}
	n := (len(b) - 1) / 2
	return map[string]any{
		"kid": kid, "kty": "EC", "alg": "ES256", "use": "sig", "crv": "P-256",
		"x": b64(b[1 : 1+n]), "y": b64(b[1+n:]),
	}
}
