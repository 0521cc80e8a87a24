package assert

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// DefaultLifetime is how long an assertion is valid.
const DefaultLifetime = time.Minute

// ErrConfig: Options that cannot make a Signer.
var ErrConfig = errors.New("assert: bad options")

// Options configure NewSigner. Zero values get the defaults in brackets.
type Options struct {
	// Issuer is the iss of every assertion and the URL the Handler serves
	// discovery under: https (http only for loopback hosts), without
	// query or fragment. Required.
	Issuer string
	// Keys are the signing keys (see LoadKeys); every one is published,
	// and the one with the latest NotBefore that has passed signs. Required.
	Keys []Key
	// Lifetime is how long an assertion is valid. [DefaultLifetime]
	Lifetime time.Duration
	// Now returns the current time. [time.Now]
	Now func() time.Time
}

// Claims are what an assertion says about its subject. Empty fields are
// left out of the token.
type Claims struct {
	// Audience is the service the assertion is for (aud). Required.
	Audience string
	// Subject is the caller's sub. Required.
	Subject string
	// Username is preferred_username.
	Username string
	// Email is email, sent with email_verified true: give only a verified
	// address.
	Email string
	// Roles and Groups are the roles and groups claims (arrays of strings).
	Roles  []string
	Groups []string
	// IssuerName names the issuer of the caller's original token
	// (claim "issuer_name").
	IssuerName string
	// ACR, AMR and AuthTime are copied from the original token when it
	// has them (acr, amr, auth_time).
	ACR      string
	AMR      []string
	AuthTime time.Time
	// Expiry caps exp (the original token's expiry: an assertion never
	// outlives the credential it stands for). [none]
	Expiry time.Time
}

// tokenClaims is the JSON payload of an assertion.
type tokenClaims struct {
	jwt.RegisteredClaims
	Username      string   `json:"preferred_username,omitempty"`
	Email         string   `json:"email,omitempty"`
	EmailVerified bool     `json:"email_verified,omitempty"`
	Roles         []string `json:"roles,omitempty"`
	Groups        []string `json:"groups,omitempty"`
	IssuerName    string   `json:"issuer_name,omitempty"`
	ACR           string   `json:"acr,omitempty"`
	AMR           []string `json:"amr,omitempty"`
	AuthTime      int64    `json:"auth_time,omitempty"`
}

// Signer signs assertions and serves the issuer's discovery and JWKS
// (Handler). It is safe for concurrent use.
type Signer struct {
	issuer   string
	lifetime time.Duration
	now      func() time.Time
	keys     []signingKey // sorted by notBefore
	jwks     []byte
	disco    []byte
}

type signingKey struct {
	Key
	kid    string
	method jwt.SigningMethod
}

// NewSigner checks o and returns its Signer.
func NewSigner(o Options) (*Signer, error) {
	if err := checkIssuer(o.Issuer); err != nil {
		return nil, err
	}
	if len(o.Keys) == 0 {
		return nil, fmt.Errorf("%w: no signing key", ErrConfig)
	}
	if o.Lifetime < 0 {
		return nil, fmt.Errorf("%w: negative lifetime %s", ErrConfig, o.Lifetime)
	}
	s := &Signer{issuer: o.Issuer, lifetime: o.Lifetime, now: o.Now}
	if s.lifetime == 0 {
		s.lifetime = DefaultLifetime
	}
	if s.now == nil {
		s.now = time.Now
	}
	var pub []jwk
	algs := []string{}
	for i, k := range o.Keys {
		if k.Signer == nil {
			return nil, fmt.Errorf("%w: key %d has no Signer", ErrConfig, i+1)
		}
		j, err := publicJWK(k.Signer.Public())
		if err != nil {
			return nil, fmt.Errorf("%w: key %d: %w", ErrConfig, i+1, err)
		}
		pub = append(pub, j)
		if !slices.Contains(algs, j.Alg) {
			algs = append(algs, j.Alg)
		}
		s.keys = append(s.keys, signingKey{Key: k, kid: j.Kid, method: jwt.GetSigningMethod(j.Alg)})
	}
	slices.SortStableFunc(s.keys, func(a, b signingKey) int { return a.NotBefore.Compare(b.NotBefore) })
	s.jwks, s.disco = documents(s.issuer, pub, algs)
	return s, nil
}

// checkIssuer refuses an issuer URL verifiers could not use.
func checkIssuer(issuer string) error {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%w: issuer %q: want https://host[/path], without query, fragment or user info", ErrConfig, issuer)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if h := u.Hostname(); h != "localhost" && h != "127.0.0.1" && h != "::1" {
			return fmt.Errorf("%w: issuer %q: http only for localhost (OpenID Connect issuers are https)", ErrConfig, issuer)
		}
	default:
		return fmt.Errorf("%w: issuer %q: want an https URL", ErrConfig, issuer)
	}
	return nil
}

// Issuer returns the iss of the assertions.
func (s *Signer) Issuer() string { return s.issuer }

// Lifetime returns how long an assertion is valid.
func (s *Signer) Lifetime() time.Duration { return s.lifetime }

// current returns the key to sign with at now: the latest whose
// NotBefore has passed, else the earliest (a file of future keys only
// still signs, rather than failing every request).
func (s *Signer) current(now time.Time) *signingKey {
	cur := &s.keys[0]
	for i := range s.keys {
		if !s.keys[i].NotBefore.After(now) {
			cur = &s.keys[i]
		}
	}
	return cur
}

// Sign returns an assertion of c, signed with the current key, and its
// expiry: now plus the lifetime, or c.Expiry when earlier. The header
// carries typ "JWT" and the key's kid; the payload iss, aud, sub, iat,
// nbf, exp, a random jti and c's other claims.
func (s *Signer) Sign(c Claims) (string, time.Time, error) {
	if c.Audience == "" || c.Subject == "" {
		return "", time.Time{}, fmt.Errorf("%w: an assertion needs an audience and a subject", ErrConfig)
	}
	now := s.now().Truncate(time.Second)
	exp := now.Add(s.lifetime)
	if !c.Expiry.IsZero() && c.Expiry.Before(exp) {
		exp = c.Expiry
	}
	var id [16]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	tc := tokenClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: s.issuer, Subject: c.Subject, Audience: jwt.ClaimStrings{c.Audience},
			IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(exp),
			ID: base64.RawURLEncoding.EncodeToString(id[:]),
		},
		Username: c.Username, Email: c.Email, EmailVerified: c.Email != "",
		Roles: c.Roles, Groups: c.Groups, IssuerName: c.IssuerName, ACR: c.ACR, AMR: c.AMR,
	}
	if !c.AuthTime.IsZero() {
		tc.AuthTime = c.AuthTime.Unix()
	}
	k := s.current(now)
	t := jwt.NewWithClaims(k.method, tc)
	t.Header["kid"] = k.kid
	raw, err := t.SignedString(k.Signer)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("assert: signing: %w", err)
	}
	return raw, exp, nil
}

// jwksPath is the JWKS's path under the issuer.
const jwksPath = "/jwks.json"

// JWKSURL returns the URL of the JWKS the Handler serves.
func (s *Signer) JWKSURL() string { return strings.TrimSuffix(s.issuer, "/") + jwksPath }
