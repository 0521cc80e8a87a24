package idp

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"time"
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

// claims are the decoded claims the verifier and the guards read, matched
// by their exact names. Keycloak's own claims are read leniently: a claim
// of an unexpected shape reads as absent (a guard on it never matches)
// instead of failing the token. The registered claims are strict: iss, sub
// and jti strings, aud a string or an array of strings, exp, nbf and iat
// JSON numbers.
type claims struct {
	Issuer, Subject, ID string
	Audience            []string
	exp, nbf, iat       float64
	hasExp, hasNbf      bool
	hasIat              bool

	AZP, Typ, Scope, SID, SessionState string
	PreferredUsername, Email, Name     string
	SCP                                []string
	EmailVerified                      bool
	RealmRoles                         []string
	ResourceAccess                     map[string]Access

	// Markers of ID tokens, kept only to refuse them (see checkClaims).
	nonce, atHash, cHash bool

	raw []byte // the payload, shared with TokenPayload.Raw
}

// claim bits, to refuse a payload that names a claim twice (RFC 7519 §4:
// parsers must reject duplicates or take the last; taking the last would
// let a token say two things).
const (
	cIss = 1 << iota
	cSub
	cAud
	cExp
	cNbf
	cIat
	cJti
	cAzp
	cTyp
	cScope
	cScp
	cSid
	cSessionState
	cRealmAccess
	cResourceAccess
	cPreferredUsername
	cEmail
	cEmailVerified
	cName
	cNonce
	cAtHash
	cCHash
)

var claimBits = map[string]int{
	"iss": cIss, "sub": cSub, "aud": cAud, "exp": cExp, "nbf": cNbf, "iat": cIat, "jti": cJti,
	"azp": cAzp, "typ": cTyp, "scope": cScope, "scp": cScp, "sid": cSid, "session_state": cSessionState,
	"realm_access": cRealmAccess, "resource_access": cResourceAccess, "preferred_username": cPreferredUsername,
	"email": cEmail, "email_verified": cEmailVerified, "name": cName, "nonce": cNonce, "at_hash": cAtHash, "c_hash": cCHash,
}

// decodeClaims decodes the payload once, matching claim names exactly.
// The claims that recur between tokens (issuer, audiences, azp, typ,
// scope, roles, client names) go through in, which may be nil; the
// per-token ones (sub, jti, sid, e-mail, names) never do. Errors are
// invalid-token errors with a client-safe reason.
func decodeClaims(in *interner, payload []byte) (*claims, error) {
	c := &claims{raw: payload}
	seen := 0
	err := eachMember(nil, payload, func(name string, v []byte) error {
		bit, read := claimBits[name]
		if !read {
			return nil
		}
		if seen&bit != 0 {
			return invalid("duplicate claim "+name, nil)
		}
		seen |= bit
		if string(v) == "null" {
			return nil // null is absent
		}
		var ok bool
		switch bit {
		case cIss:
			if c.Issuer, ok = jsonString(in, v); !ok {
				return invalid("malformed iss claim", nil)
			}
		case cSub:
			if c.Subject, ok = jsonString(nil, v); !ok {
				return invalid("malformed sub claim", nil)
			}
		case cJti:
			c.ID, _ = jsonString(nil, v) // read leniently, as before: a numeric jti reads as ""
		case cAud:
			if s, isStr := jsonString(in, v); isStr {
				c.Audience = []string{s}
			} else if c.Audience, ok = jsonStrings(in, v); !ok {
				return invalid("malformed aud claim", nil)
			}
		case cExp:
			if c.exp, ok = jsonNumber(v); !ok {
				return invalid("exp must be a number", nil)
			}
			c.hasExp = true
		case cNbf:
			if c.nbf, ok = jsonNumber(v); !ok {
				return invalid("nbf must be a number", nil)
			}
			c.hasNbf = true
		case cIat:
			if c.iat, ok = jsonNumber(v); !ok {
				return invalid("iat must be a number", nil)
			}
			c.hasIat = true
		case cAzp:
			c.AZP, _ = jsonString(in, v)
		case cTyp:
			c.Typ, _ = jsonString(in, v)
		case cScope:
			c.Scope, _ = jsonString(in, v)
		case cScp:
			c.SCP = lenientStrings(in, v)
		case cSid:
			c.SID, _ = jsonString(nil, v)
		case cSessionState:
			c.SessionState, _ = jsonString(nil, v)
		case cPreferredUsername:
			c.PreferredUsername, _ = jsonString(nil, v)
		case cEmail:
			c.Email, _ = jsonString(nil, v)
		case cName:
			c.Name, _ = jsonString(nil, v)
		case cEmailVerified:
			c.EmailVerified = string(v) == "true"
		case cRealmAccess:
			c.RealmRoles = accessRoles(in, v)
		case cResourceAccess:
			c.ResourceAccess = resourceAccess(in, v)
		case cNonce:
			c.nonce = true
		case cAtHash:
			c.atHash = true
		case cCHash:
			c.cHash = true
		}
		return nil
	})
	if errors.Is(err, errJSON) {
		return nil, invalid("malformed token", err)
	}
	return c, err
}

// lenientStrings reads an array's string elements, skipping the others;
// any other JSON value reads as none.
func lenientStrings(in *interner, v []byte) []string {
	if len(v) == 0 || v[0] != '[' {
		return nil
	}
	if out, ok := jsonStrings(in, v); ok {
		return out
	}
	var raw []json.RawMessage
	if json.Unmarshal(v, &raw) != nil {
		return nil
	}
	out := make([]string, 0, len(raw))
	for _, r := range raw {
		if s, ok := jsonString(in, r); ok {
			out = append(out, s)
		}
	}
	return out
}

// accessRoles reads {"roles": [...]} with the exact name "roles"; any
// other shape reads as no roles.
func accessRoles(in *interner, v []byte) []string {
	if len(v) == 0 || v[0] != '{' {
		return nil
	}
	var roles []string
	dup := false
	_ = eachMember(in, v, func(name string, val []byte) error {
		if name == "roles" {
			if roles != nil {
				dup = true
			}
			roles = lenientStrings(in, val)
			if roles == nil {
				roles = []string{}
			}
		}
		return nil
	})
	if dup {
		return nil // two "roles": neither is believed
	}
	return roles
}

// resourceAccess reads {"client": {"roles": [...]}, ...}; entries of
// another shape read as no roles, a client named twice as none.
func resourceAccess(in *interner, v []byte) map[string]Access {
	if len(v) == 0 || v[0] != '{' {
		return nil
	}
	out := map[string]Access{}
	dups := map[string]bool{}
	_ = eachMember(in, v, func(client string, val []byte) error {
		if _, seen := out[client]; seen {
			dups[client] = true
		}
		out[client] = Access{Roles: accessRoles(in, val)}
		return nil
	})
	for client := range dups {
		delete(out, client)
	}
	return out
}

func numericTime(f float64) time.Time {
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9))
}

func (c *claims) payload() *TokenPayload {
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
		Raw:               c.raw,
	}
	if c.hasExp {
		p.ExpiresAt = numericTime(c.exp)
	}
	if c.hasIat {
		p.IssuedAt = numericTime(c.iat)
	}
	if c.hasNbf {
		p.NotBefore = numericTime(c.nbf)
	}
	return p
}

func (c *claims) user() *User {
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
