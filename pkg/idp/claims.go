package idp

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

// Access holds the roles of a realm_access or resource_access entry:
// Roles []string, JSON "roles".
type Access = token.Access

// TokenPayload holds the verified claims of an access token: the registered
// claims, Keycloak's claims, and the whole payload as raw JSON. It is shared
// between requests that present the same token: treat it as read-only.
// A date beyond ±2^53 seconds from 1970 (about 285 million years) reads as
// that bound.
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

// payloadOf builds the TokenPayload of verified claims.
func payloadOf(c *token.Claims) *TokenPayload {
	p := &TokenPayload{
		Issuer:            c.Issuer,
		Subject:           c.Subject,
		Audience:          c.Audience,
		ID:                c.ID,
		AuthorizedParty:   c.AZP,
		Type:              c.Typ,
		Scope:             c.Scope,
		SessionID:         c.SID,
		SessionState:      c.SessionState,
		RealmAccess:       Access{Roles: c.RealmRoles},
		ResourceAccess:    c.ResourceAccess,
		PreferredUsername: c.PreferredUsername,
		Email:             c.Email,
		EmailVerified:     c.EmailVerified,
		Name:              c.Name,
		Raw:               c.Raw,
	}
	if c.HasExp {
		p.ExpiresAt = token.NumericTime(c.Exp)
	}
	if c.HasIat {
		p.IssuedAt = token.NumericTime(c.Iat)
	}
	if c.HasNbf {
		p.NotBefore = token.NumericTime(c.Nbf)
	}
	return p
}

// userOf builds the User of verified claims.
func userOf(c *token.Claims) *User {
	u := &User{
		Sub:               c.Subject,
		PreferredUsername: c.PreferredUsername,
		Email:             c.Email,
		Name:              c.Name,
		RealmRoles:        c.RealmRoles,
		Scopes:            strings.Fields(c.Scope),
	}
	if len(u.Scopes) == 0 && len(c.SCP) > 0 {
		u.Scopes = c.SCP
	}
	if len(c.ResourceAccess) > 0 {
		u.ClientRoles = make(map[string][]string, len(c.ResourceAccess))
		for client, a := range c.ResourceAccess {
			u.ClientRoles[client] = a.Roles
		}
	}
	return u
}
