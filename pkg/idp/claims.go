package idp

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Access holds the roles of a realm_access or resource_access entry.
type Access struct {
	Roles []string `json:"roles"`
}

// TokenPayload holds the verified claims of an access token: the registered
// claims, Keycloak's claims, and the whole payload as raw JSON. It is shared
// between requests that present the same token: treat it as read-only.
type TokenPayload struct {
	Issuer    string
	Subject   string
	Audience  []string
	ExpiresAt time.Time
	IssuedAt  time.Time // zero when absent
	NotBefore time.Time // zero when absent
	ID        string    // jti

	AuthorizedParty   string            // azp
	Type              string            // typ, "Bearer" for Keycloak access tokens
	Scope             string            // scope, space-separated
	SessionID         string            // sid
	SessionState      string            // session_state
	RealmAccess       Access            // realm_access
	ResourceAccess    map[string]Access // resource_access
	PreferredUsername string            // preferred_username
	Email             string
	EmailVerified     bool
	Name              string

	// Raw is the decoded JSON payload, for claims not listed above.
	Raw json.RawMessage
}

// Claim decodes the claim name of the raw payload into v. It reports
// whether the claim was present and decoded.
func (p *TokenPayload) Claim(name string, v any) bool {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(p.Raw, &m); err != nil {
		return false
	}
	raw, ok := m[name]
	if !ok {
		return false
	}
	return json.Unmarshal(raw, v) == nil
}

// User is the identity built from a verified access token (the
// specification's current_user). It is shared between requests that present
// the same token: treat it as read-only.
type User struct {
	Sub               string
	PreferredUsername string
	Email             string
	Name              string
	RealmRoles        []string
	ClientRoles       map[string][]string // client ID -> roles
	Scopes            []string
}

// HasRealmRole reports whether u holds the realm role.
func (u *User) HasRealmRole(role string) bool { return contains(u.RealmRoles, role) }

// HasClientRole reports whether u holds the role of the client.
func (u *User) HasClientRole(clientID, role string) bool {
	return contains(u.ClientRoles[clientID], role)
}

// HasScope reports whether the token carries the scope.
func (u *User) HasScope(scope string) bool { return contains(u.Scopes, scope) }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// claims is what the JWT parser decodes the payload into. Keycloak's claims
// are decoded leniently: a claim of an unexpected shape reads as absent (so a
// guard on it never matches) instead of failing the whole token; the
// registered claims are strict.
type claims struct {
	Issuer    string           `json:"iss"`
	Subject   string           `json:"sub"`
	Audience  jwt.ClaimStrings `json:"aud"`
	ExpiresAt *jwt.NumericDate `json:"exp"`
	NotBefore *jwt.NumericDate `json:"nbf"`
	IssuedAt  *jwt.NumericDate `json:"iat"`
	ID        lenientString    `json:"jti"`

	AZP               lenientString         `json:"azp"`
	Typ               lenientString         `json:"typ"`
	Scope             lenientString         `json:"scope"`
	SCP               lenientStrings        `json:"scp"`
	SID               lenientString         `json:"sid"`
	SessionState      lenientString         `json:"session_state"`
	RealmAccess       lenientAccess         `json:"realm_access"`
	ResourceAccess    lenientResourceAccess `json:"resource_access"`
	PreferredUsername lenientString         `json:"preferred_username"`
	Email             lenientString         `json:"email"`
	EmailVerified     lenientBool           `json:"email_verified"`
	Name              lenientString         `json:"name"`

	// Markers of ID tokens, kept only to refuse them (see checkClaims).
	Nonce  json.RawMessage `json:"nonce"`
	AtHash json.RawMessage `json:"at_hash"`
	CHash  json.RawMessage `json:"c_hash"`

	raw json.RawMessage
}

// UnmarshalJSON keeps a copy of the raw payload beside the decoded claims.
func (c *claims) UnmarshalJSON(b []byte) error {
	type plain claims
	if err := json.Unmarshal(b, (*plain)(c)); err != nil {
		return err
	}
	c.raw = bytes.Clone(b)
	return nil
}

// jwt.Claims implementation: the parser validates exp, nbf, iat and iss
// through these.

func (c *claims) GetExpirationTime() (*jwt.NumericDate, error) { return c.ExpiresAt, nil }
func (c *claims) GetNotBefore() (*jwt.NumericDate, error)      { return c.NotBefore, nil }
func (c *claims) GetIssuedAt() (*jwt.NumericDate, error)       { return c.IssuedAt, nil }
func (c *claims) GetIssuer() (string, error)                   { return c.Issuer, nil }
func (c *claims) GetSubject() (string, error)                  { return c.Subject, nil }
func (c *claims) GetAudience() (jwt.ClaimStrings, error)       { return c.Audience, nil }

func (c *claims) payload() *TokenPayload {
	p := &TokenPayload{
		Issuer:            c.Issuer,
		Subject:           c.Subject,
		Audience:          []string(c.Audience),
		ID:                string(c.ID),
		AuthorizedParty:   string(c.AZP),
		Type:              string(c.Typ),
		Scope:             string(c.Scope),
		SessionID:         string(c.SID),
		SessionState:      string(c.SessionState),
		RealmAccess:       Access{Roles: []string(c.RealmAccess.Roles)},
		ResourceAccess:    map[string]Access(c.ResourceAccess),
		PreferredUsername: string(c.PreferredUsername),
		Email:             string(c.Email),
		EmailVerified:     bool(c.EmailVerified),
		Name:              string(c.Name),
		Raw:               c.raw,
	}
	if c.ExpiresAt != nil {
		p.ExpiresAt = c.ExpiresAt.Time
	}
	if c.IssuedAt != nil {
		p.IssuedAt = c.IssuedAt.Time
	}
	if c.NotBefore != nil {
		p.NotBefore = c.NotBefore.Time
	}
	return p
}

func (c *claims) user() *User {
	u := &User{
		Sub:               c.Subject,
		PreferredUsername: string(c.PreferredUsername),
		Email:             string(c.Email),
		Name:              string(c.Name),
		RealmRoles:        []string(c.RealmAccess.Roles),
		Scopes:            strings.Fields(string(c.Scope)),
	}
	if len(u.Scopes) == 0 && len(c.SCP) > 0 {
		u.Scopes = []string(c.SCP)
	}
	if len(c.ResourceAccess) > 0 {
		u.ClientRoles = make(map[string][]string, len(c.ResourceAccess))
		for client, a := range c.ResourceAccess {
			u.ClientRoles[client] = a.Roles
		}
	}
	return u
}

// lenientString decodes a JSON string; any other JSON value reads as "".
type lenientString string

func (s *lenientString) UnmarshalJSON(b []byte) error {
	var v string
	if json.Unmarshal(b, &v) == nil {
		*s = lenientString(v)
	} else {
		*s = ""
	}
	return nil
}

// lenientBool decodes a JSON boolean; any other value reads as false.
type lenientBool bool

func (v *lenientBool) UnmarshalJSON(b []byte) error {
	*v = lenientBool(bytes.Equal(b, []byte("true")))
	return nil
}

// lenientStrings decodes a JSON array of strings, skipping non-string
// elements; any other JSON value reads as empty.
type lenientStrings []string

func (s *lenientStrings) UnmarshalJSON(b []byte) error {
	*s = nil
	var raw []json.RawMessage
	if json.Unmarshal(b, &raw) != nil {
		return nil
	}
	out := make([]string, 0, len(raw))
	for _, r := range raw {
		var v string
		if json.Unmarshal(r, &v) == nil {
			out = append(out, v)
		}
	}
	*s = out
	return nil
}

// lenientAccess decodes {"roles": [...]}; any other shape reads as no roles.
type lenientAccess struct {
	Roles lenientStrings `json:"roles"`
}

func (a *lenientAccess) UnmarshalJSON(b []byte) error {
	type plain lenientAccess
	var v plain
	if json.Unmarshal(b, &v) != nil {
		*a = lenientAccess{}
		return nil
	}
	*a = lenientAccess(v)
	return nil
}

// lenientResourceAccess decodes {"client": {"roles": [...]}, ...}; entries of
// another shape read as no roles.
type lenientResourceAccess map[string]Access

func (m *lenientResourceAccess) UnmarshalJSON(b []byte) error {
	*m = nil
	var raw map[string]lenientAccess
	if json.Unmarshal(b, &raw) != nil {
		return nil
	}
	out := make(lenientResourceAccess, len(raw))
	for k, v := range raw {
		out[k] = Access{Roles: []string(v.Roles)}
	}
	*m = out
	return nil
}
