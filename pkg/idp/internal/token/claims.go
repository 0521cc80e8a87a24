package token

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"time"
)

// Access holds the roles of a realm_access or resource_access entry
// (pkg/idp exports it as idp.Access).
type Access struct {
	Roles []string `json:"roles"`
}

// Claims are the decoded claims the verifier and the guards read, matched
// by their exact names. Keycloak's own claims are read leniently: a claim
// of an unexpected shape reads as absent (a guard on it never matches)
// instead of failing the token. The registered claims are strict: iss, sub
// and jti strings, aud a string or an array of strings, exp, nbf and iat
// JSON numbers.
type Claims struct {
	Issuer, Subject, ID string
	Audience            []string
	Exp, Nbf, Iat       float64 // NumericDates, never NaN (±Inf past float64's range): see NumericTime
	HasExp, HasNbf      bool
	HasIat              bool

	AZP, Typ, Scope, SID, SessionState string
	PreferredUsername, Email, Name     string
	SCP                                []string
	RealmRoles                         []string
	ResourceAccess                     map[string]Access
	Groups                             []string // groups, read leniently like roles
	EmailVerified                      bool     // beside the other booleans: Claims stays in its size class

	// Markers of ID tokens, kept only to refuse them: the presence of
	// nonce, at_hash and c_hash.
	Nonce, ATHash, CHash bool
	// Cnf: the token carries a confirmation claim (RFC 7800 cnf, not
	// null), binding it to a key its sender must prove it holds.
	Cnf bool

	// Mapped is the identity a Mapping read (DecodeMapped); nil from
	// DecodeClaims.
	Mapped *Mapped

	Raw []byte // the payload, shared, never modified
}

// claim bits: the claims decode reads. (A claim named twice never gets
// here: EachMember refuses any name twice, see names.go.)
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
	cGroups
	cCnf
)

var claimBits = map[string]int{
	"iss": cIss, "sub": cSub, "aud": cAud, "exp": cExp, "nbf": cNbf, "iat": cIat, "jti": cJti,
	"azp": cAzp, "typ": cTyp, "scope": cScope, "scp": cScp, "sid": cSid, "session_state": cSessionState,
	"realm_access": cRealmAccess, "resource_access": cResourceAccess, "preferred_username": cPreferredUsername,
	"email": cEmail, "email_verified": cEmailVerified, "name": cName, "nonce": cNonce, "at_hash": cAtHash, "c_hash": cCHash,
	"groups": cGroups, "cnf": cCnf,
}

// DecodeClaims decodes the payload once, matching claim names exactly.
// The claims that recur between tokens (issuer, audiences, azp, typ,
// scope, roles, client names) go through in, which may be nil; the
// per-token ones (sub, jti, sid, e-mail, names) never do. Errors are
// invalid-token errors with a client-safe reason.
func DecodeClaims(in *Interner, payload []byte) (*Claims, error) {
	return decode(in, payload, nil)
}

// decode is DecodeClaims, and DecodeMapped when m is not nil.
func decode(in *Interner, payload []byte, m *Mapping) (*Claims, error) {
	c := &Claims{Raw: payload}
	var vals [][]byte // the top-level values m's paths start at
	if m != nil {
		vals = m.mappedValues()
	}
	err := eachMemberOnePass(nil, payload, func(name string, bit int, v []byte) error {
		if m != nil {
			if err := m.capture(vals, name, v); err != nil {
				return err
			}
		}
		if bit == 0 {
			return nil // a claim decode does not read
		}
		if string(v) == "null" {
			return nil // null is absent
		}
		var ok bool
		switch bit {
		case cIss:
			if c.Issuer, ok = String(in, v); !ok {
				return Invalid("malformed iss claim", nil)
			}
		case cSub:
			if c.Subject, ok = String(nil, v); !ok {
				return Invalid("malformed sub claim", nil)
			}
		case cJti:
			c.ID, _ = String(nil, v) // read leniently, as before: a numeric jti reads as ""
		case cAud:
			if s, isStr := String(in, v); isStr {
				c.Audience = []string{s}
			} else if c.Audience, ok = jsonStrings(in, v); !ok {
				return Invalid("malformed aud claim", nil)
			}
		case cExp:
			if c.Exp, ok = jsonNumber(v); !ok {
				return Invalid("exp must be a number", nil)
			}
			c.HasExp = true
		case cNbf:
			if c.Nbf, ok = jsonNumber(v); !ok {
				return Invalid("nbf must be a number", nil)
			}
			c.HasNbf = true
		case cIat:
			if c.Iat, ok = jsonNumber(v); !ok {
				return Invalid("iat must be a number", nil)
			}
			c.HasIat = true
		case cAzp:
			c.AZP, _ = String(in, v)
		case cTyp:
			c.Typ, _ = String(in, v)
		case cScope:
			c.Scope, _ = String(in, v)
		case cScp:
			c.SCP = lenientStrings(in, v)
		case cSid:
			c.SID, _ = String(nil, v)
		case cSessionState:
			c.SessionState, _ = String(nil, v)
		case cPreferredUsername:
			c.PreferredUsername, _ = String(nil, v)
		case cEmail:
			c.Email, _ = String(nil, v)
		case cName:
			c.Name, _ = String(nil, v)
		case cEmailVerified:
			c.EmailVerified = string(v) == "true"
		case cRealmAccess:
			c.RealmRoles = accessRoles(in, v)
		case cResourceAccess:
			c.ResourceAccess = resourceAccess(in, v)
		case cNonce:
			c.Nonce = true
		case cAtHash:
			c.ATHash = true
		case cCHash:
			c.CHash = true
		case cGroups:
			c.Groups = lenientStrings(in, v)
		case cCnf:
			c.Cnf = true
		}
		return nil
	})
	if reason, ok := duplicateReason(err, "claim"); ok {
		return nil, Invalid(reason, nil)
	}
	if errors.Is(err, errJSON) {
		return nil, Invalid("malformed token", err)
	}
	if err == nil && m != nil {
		c.Mapped, err = m.resolve(in, vals, c)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Scopes returns Keycloak's reading of the scopes: scope split at
// spaces, else scp.
func (c *Claims) Scopes() []string {
	s := strings.Fields(c.Scope)
	if len(s) == 0 && len(c.SCP) > 0 {
		return c.SCP
	}
	return s
}

// lenientStrings reads an array's string elements, skipping the others;
// any other JSON value reads as none.
func lenientStrings(in *Interner, v []byte) []string {
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
		if s, ok := String(in, r); ok {
			out = append(out, s)
		}
	}
	return out
}

// accessRoles reads {"roles": [...]} with the exact name "roles"; any
// other shape reads as no roles. v is a value of the payload decode
// validated.
func accessRoles(in *Interner, v []byte) []string {
	if len(v) == 0 || v[0] != '{' {
		return nil
	}
	var roles []string
	_ = eachValidMember(in, v, func(name string, val []byte) error {
		if name == "roles" { // once: EachMember refused a name twice
			roles = lenientStrings(in, val)
			if roles == nil {
				roles = []string{}
			}
		}
		return nil
	})
	return roles
}

// resourceAccess reads {"client": {"roles": [...]}, ...}; entries of
// another shape read as no roles.
func resourceAccess(in *Interner, v []byte) map[string]Access {
	if len(v) == 0 || v[0] != '{' {
		return nil
	}
	out := map[string]Access{}
	_ = eachValidMember(in, v, func(client string, val []byte) error {
		out[client] = Access{Roles: accessRoles(in, val)}
		return nil
	})
	return out
}

// MaxNumericDate bounds the times NumericTime returns, in seconds either
// side of 1970: 2^53, the largest range in which a float64 holds every
// whole second (about 285 million years).
const MaxNumericDate = 1 << 53

// NumericTime converts a NumericDate (RFC 7519 §2: seconds since 1970, of
// any sign and size, possibly fractional, as DecodeClaims reads it) to a
// time, exactly to the nanosecond below within ±MaxNumericDate; a value
// beyond, ±Inf included, reads as the bound. So a date compares with any
// real now as the number itself does (an nbf of 1e19 is the future, not
// an overflow into the far past), and no later conversion of the time to
// seconds overflows. f must not be NaN; DecodeClaims never returns one.
func NumericTime(f float64) time.Time {
	switch {
	case f >= MaxNumericDate:
		return time.Unix(MaxNumericDate, 0)
	case f <= -MaxNumericDate:
		return time.Unix(-MaxNumericDate, 0)
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9))
}
