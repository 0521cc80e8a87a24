package idp

import (
	"fmt"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

// ClaimPreset names a provider's claim shapes: where the username, e-mail,
// roles, groups and scopes of a token are read.
type ClaimPreset string

// Claim presets.
const (
	// PresetKeycloak reads Keycloak's claims: preferred_username, email,
	// realm_access.roles (and resource_access.<client>.roles for the
	// client roles), groups when present, and scope (else scp). Claims of
	// an unexpected shape read as absent, so a guard on them never
	// matches. The default.
	PresetKeycloak ClaimPreset = "keycloak"
	// PresetGeneric reads the common claims of other providers (Entra ID,
	// Okta, Auth0 with a rule, Dex, Authentik): username from
	// preferred_username, else email, else sub; email; roles and groups
	// (arrays of strings); scopes from scope (a space-separated string),
	// else scp (a string or an array of strings). Types are checked: a
	// claim of another type makes the token invalid.
	PresetGeneric ClaimPreset = "generic"
)

// ParseClaimPreset parses "keycloak" or "generic"; "" is PresetKeycloak.
func ParseClaimPreset(s string) (ClaimPreset, error) {
	switch ClaimPreset(s) {
	case "", PresetKeycloak:
		return PresetKeycloak, nil
	case PresetGeneric:
		return PresetGeneric, nil
	}
	return "", fmt.Errorf("%w: claim preset %q: want keycloak or generic", ErrConfig, s)
}

// ClaimMapping says where the identity is read from a verified token: a
// preset, and claim paths (see ClaimPath) that override the preset's for
// one field each. The zero value is the Keycloak preset, decoded exactly
// as without a mapping.
//
// A field given a path, and every field of PresetGeneric, is read strictly: a value of
// the wrong type (a roles claim that is not an array of strings, or not an
// object for keys(...)), or a member named twice in an object on the way,
// makes the token invalid; an absent or null claim reads as empty.
type ClaimMapping struct {
	// Preset is PresetKeycloak or PresetGeneric. [PresetKeycloak]
	Preset ClaimPreset
	// Username is read into User.PreferredUsername. A string.
	Username string
	// Email is read into User.Email. A string.
	Email string
	// Roles are read into User.RealmRoles, which RequireRoles checks: an
	// array of strings, or keys(path) for the keys of an object.
	Roles string
	// Groups are read into User.Groups (RequireGroups), as Roles.
	Groups string
	// Scopes are read into User.Scopes (RequireScopes): a space-separated
	// string, an array of strings, or keys(path).
	Scopes string
}

// ClaimPath is a parsed claim path: the name of a claim of the token, or
// of a member nested in one. Its syntax:
//
//   - roles, realm_access.roles, resource_access.my-client.roles: member
//     names separated by '.', from the payload's top level down;
//   - https://example.com/roles, urn:zitadel:iam:org:project:roles: a
//     path that contains ':' or '/' and no '[' is one top-level name, dots
//     included (namespaced claims need no escaping);
//   - ["a.b"], ["https://example.com/app"].roles, resource_access["my.app"].roles:
//     a JSON string in brackets is one name, whatever it holds;
//   - keys(P): the names of the members of the object at P, for
//     providers that give roles as an object's keys (Zitadel).
//
// Names are matched exactly. Spaces, control characters, '"' and ']' are
// refused outside brackets.
type ClaimPath struct{ p token.Path }

// ClaimPathError is a claim path that does not parse: its text, the byte
// offset of the problem, and the reason.
type ClaimPathError = token.PathError

// ParseClaimPath parses a claim path; the error is a *ClaimPathError.
func ParseClaimPath(s string) (ClaimPath, error) {
	p, err := token.ParsePath(s)
	if err != nil {
		return ClaimPath{}, err
	}
	return ClaimPath{p: p}, nil
}

// String returns the path as written.
func (c ClaimPath) String() string { return c.p.Text }

// Keys reports whether the path names the keys of an object (keys(...)).
func (c ClaimPath) Keys() bool { return c.p.Keys }

// Validate reports the first problem of m: an unknown preset or a path
// that does not parse, naming the field.
func (m ClaimMapping) Validate() error {
	_, err := m.compile()
	return err
}

// compile returns the decoding m asks for; nil for the Keycloak preset
// without overrides, which keeps the plain decoding.
func (m ClaimMapping) compile() (*token.Mapping, error) {
	preset, err := ParseClaimPreset(string(m.Preset))
	if err != nil {
		return nil, err
	}
	if preset == PresetKeycloak && m == (ClaimMapping{Preset: m.Preset}) {
		return nil, nil
	}
	// The Keycloak preset's fields without a path keep its lenient reading.
	var tm token.Mapping
	if preset == PresetGeneric {
		tm = token.Mapping{
			Username: mustPaths("preferred_username", "email", "sub"),
			Email:    mustPaths("email"),
			Roles:    mustPaths("roles"),
			Groups:   mustPaths("groups"),
			Scopes:   mustPaths("scope", "scp"),
		}
	}
	for _, f := range []struct {
		name, text string
		dst        *[]token.Path
	}{
		{"username", m.Username, &tm.Username},
		{"email", m.Email, &tm.Email},
		{"roles", m.Roles, &tm.Roles},
		{"groups", m.Groups, &tm.Groups},
		{"scopes", m.Scopes, &tm.Scopes},
	} {
		if f.text == "" {
			continue
		}
		p, err := token.ParsePath(f.text)
		if err != nil {
			return nil, fmt.Errorf("%w: claims.%s: %w", ErrConfig, f.name, err)
		}
		*f.dst = []token.Path{p}
	}
	out, err := token.NewMapping(tm)
	if err != nil {
		return nil, fmt.Errorf("%w: claims: %w", ErrConfig, err)
	}
	return out, nil
}

// mustPaths parses the presets' paths, which are known to parse.
func mustPaths(texts ...string) []token.Path {
	out := make([]token.Path, len(texts))
	for i, t := range texts {
		p, err := token.ParsePath(t)
		if err != nil {
			panic(err)
		}
		out[i] = p
	}
	return out
}
