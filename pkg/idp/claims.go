package idp

import (
	"encoding/json"
	"fmt"
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

// ClaimAt decodes the claim path names into v (with encoding/json; for a
// keys(...) path v must be a *[]string and receives the object's keys).
// It reports whether the claim was present (not absent, not null); the
// error is an ErrInvalidToken for a path that crosses a value other than
// an object or a name given twice, or the decoding error.
func (p *TokenPayload) ClaimAt(path ClaimPath, v any) (bool, error) {
	raw, err := token.Lookup(p.Raw, path.p)
	if err != nil || raw == nil {
		return false, err
	}
	if !path.p.Keys {
		return true, json.Unmarshal(raw, v)
	}
	dst, ok := v.(*[]string)
	if !ok {
		return true, fmt.Errorf("idp: ClaimAt %s: want a *[]string for a keys(...) path, got %T", path, v)
	}
	keys, err := token.Keys(raw, path.p)
	if err != nil {
		return true, err
	}
	*dst = keys
	return true, nil
}

// User is the identity built from a verified access token (the
// specification's current_user) by the plugin's ClaimMapping. It is
// shared between requests that present the same token: treat it as
// read-only.
type User struct {
	// IssuerName names the issuer that issued the token:
	// Config.IssuerName ("default" unless set) or a TrustedIssuer's Name.
	IssuerName string
	Sub        string
	// PreferredUsername is the username: preferred_username with the
	// Keycloak preset; the mapped username otherwise.
	PreferredUsername string
	Email             string // the mapped e-mail (email with both presets)
	Name              string
	// RealmRoles are the roles RequireRoles and HasRole check, whichever
	// provider issued the token: realm_access.roles with the Keycloak
	// preset, the mapped roles (ClaimMapping.Roles) otherwise. The name is
	// the specification's (Keycloak's realm roles); it holds any
	// provider's roles.
	RealmRoles  []string
	ClientRoles map[string][]string // client ID -> roles, from resource_access
	// Groups are the groups RequireGroups checks: the groups claim (an
	// array of strings; with the Keycloak preset only when the token
	// carries one, as Keycloak's group-membership mapper writes it), or
	// the mapped groups.
	Groups []string
	// Scopes are the scopes RequireScopes checks: scope split at
	// spaces, else scp, or the mapped scopes.
	Scopes []string
}

// HasGroup reports whether u is in the group.
func (u *User) HasGroup(group string) bool { return contains(u.Groups, group) }

// HasRole reports whether u holds the role (one of RealmRoles, whichever
// provider issued the token).
func (u *User) HasRole(role string) bool { return contains(u.RealmRoles, role) }

// HasRealmRole reports whether u holds the role.
//
// Deprecated: use HasRole; the roles are any provider's, not only
// Keycloak's realm roles. HasRealmRole stays for the specification's name.
func (u *User) HasRealmRole(role string) bool { return u.HasRole(role) }

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

// userOf builds the User of verified claims of the issuer named issuerName.
func userOf(c *token.Claims, issuerName string) *User {
	u := &User{
		IssuerName:        issuerName,
		Sub:               c.Subject,
		PreferredUsername: c.PreferredUsername,
		Email:             c.Email,
		Name:              c.Name,
		RealmRoles:        c.RealmRoles,
		Groups:            c.Groups,
		Scopes:            c.Scopes(),
	}
	if m := c.Mapped; m != nil {
		u.PreferredUsername, u.Email, u.RealmRoles, u.Groups, u.Scopes = m.Username, m.Email, m.Roles, m.Groups, m.Scopes
	}
	if len(c.ResourceAccess) > 0 {
		u.ClientRoles = make(map[string][]string, len(c.ResourceAccess))
		for client, a := range c.ResourceAccess {
			u.ClientRoles[client] = a.Roles
		}
	}
	return u
}
