// Package seal seals small values into cookies (AES-256-GCM, bound to the
// cookie's name and a scope) for the /auth routes' login state and the
// browser sessions of package idp.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Sealed cookies.
//
// A sealed value is base64url(version || nonce || AES-256-GCM(payload)),
// with version || cookie name || 0 || scope as additional authenticated
// data, so a value sealed for one cookie cannot be replayed as another, nor
// a value sealed by one deployment opened by another that shares its
// secret (a copied example, a shared vault entry): the scope names what
// the cookie belongs to (Scope). The AES key is derived from
// idp.Config.SessionSecret with HKDF-SHA-256 and a purpose label, so the same
// secret can key other uses without key reuse. The payload is JSON carrying
// its own expiry, which is checked on opening: the browser's Max-Age is a
// hint, the sealed expiry is the rule.

// sealVersion 2 binds the scope; values of version 1 (no scope) are
// refused: their users sign in again.
const sealVersion byte = 2

var (
	// ErrInvalid: a sealed value is malformed, forged, tampered with or
	// sealed with another secret. Deliberately without detail.
	ErrInvalid = errors.New("idp: sealed value invalid")
	// ErrExpired: a sealed value is authentic but past its expiry.
	ErrExpired = errors.New("idp: sealed value expired")
)

// Sealer seals and opens small values with AES-256-GCM. It seals with the
// key of the current secret and opens with it or with the key of a
// previous secret (key rotation). It is safe for concurrent use.
type Sealer struct {
	aead  cipher.AEAD   // the current key: seals and opens
	old   []cipher.AEAD // previous keys: open only
	Max   int           // longest value Open accepts (8 KiB unless set)
	scope string        // bound into every value (Scope)
}

// New derives the sealing key for purpose from secret, and the keys
// of the previous secrets that may still open values; every value it
// seals is bound to scope and opens only with the same scope.
func New(secret []byte, purpose, scope string, previous ...[]byte) (*Sealer, error) {
	s := &Sealer{Max: 8 << 10, scope: scope}
	for i, sec := range append([][]byte{secret}, previous...) {
		key, err := hkdf.Key(sha256.New, sec, nil, "idp-proxy/pkg/idp "+purpose, 32)
		if err != nil {
			return nil, fmt.Errorf("idp: derive sealing key: %w", err)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("idp: sealing cipher: %w", err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("idp: sealing cipher: %w", err)
		}
		if i == 0 {
			s.aead = aead
		} else {
			s.old = append(s.old, aead)
		}
	}
	return s, nil
}

type sealedPayload struct {
	Exp  int64           `json:"exp"`
	Data json.RawMessage `json:"d"`
}

// Seal encrypts v (JSON-encoded) for the cookie name, valid until exp.
func (s *Sealer) Seal(name string, v any, exp time.Time) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("idp: seal: %w", err)
	}
	plain, err := json.Marshal(sealedPayload{Exp: exp.Unix(), Data: data})
	if err != nil {
		return "", fmt.Errorf("idp: seal: %w", err)
	}
	ns := s.aead.NonceSize()
	out := make([]byte, 1+ns, 1+ns+len(plain)+s.aead.Overhead())
	out[0] = sealVersion
	if _, err := rand.Read(out[1:]); err != nil {
		return "", fmt.Errorf("idp: seal: %w", err)
	}
	out = s.aead.Seal(out, out[1:1+ns], plain, s.aad(name))
	return base64.RawURLEncoding.EncodeToString(out), nil
}

// aad is the additional authenticated data of a value sealed for the
// cookie name: the version, the name (a cookie token: no 0) and the scope.
func (s *Sealer) aad(name string) []byte {
	b := make([]byte, 0, 2+len(name)+len(s.scope))
	b = append(append(append(b, sealVersion), name...), 0)
	return append(b, s.scope...)
}

// Scope is what a deployment's sealed cookies belong to: the session
// cookie's domain (cookieDomain, when set), or else the callback host
// (redirectURI's, where the host-only session cookie is set, and the
// login state read), the issuer and the client. Two deployments differ in
// one of them; replicas of one share all.
func Scope(redirectURI, cookieDomain, issuer, clientID string) string {
	where := "host="
	if u, err := url.Parse(redirectURI); err == nil {
		where += strings.ToLower(u.Host)
	}
	if cookieDomain != "" {
		where = "domain=" + strings.ToLower(strings.TrimPrefix(cookieDomain, "."))
	}
	b, _ := json.Marshal([3]string{where, issuer, clientID}) // unambiguous whatever they hold
	return string(b)
}

// Open authenticates and decrypts value sealed for the cookie name and
// decodes it into v. It fails with ErrInvalid or ErrExpired.
func (s *Sealer) Open(name, value string, now time.Time, v any) error {
	if len(value) > s.Max {
		return ErrInvalid
	}
	raw, err := base64.RawURLEncoding.DecodeString(value)
	ns := s.aead.NonceSize()
	if err != nil || len(raw) < 1+ns+s.aead.Overhead() || raw[0] != sealVersion {
		return ErrInvalid
	}
	aad := s.aad(name)
	plain, err := s.aead.Open(nil, raw[1:1+ns], raw[1+ns:], aad)
	for _, old := range s.old {
		if err == nil {
			break
		}
		plain, err = old.Open(nil, raw[1:1+ns], raw[1+ns:], aad)
	}
	if err != nil {
		return ErrInvalid
	}
	var p sealedPayload
	if err := json.Unmarshal(plain, &p); err != nil {
		return ErrInvalid
	}
	if !now.Before(time.Unix(p.Exp, 0)) {
		return ErrExpired
	}
	if err := json.Unmarshal(p.Data, v); err != nil {
		return ErrInvalid
	}
	return nil
}
