package idp

import (
	"fmt"
	"strings"
)

// MatchStrategy says how a guard matches its list: MatchAll (the default,
// the zero value) needs every item, MatchAny at least one.
type MatchStrategy int

// Match strategies.
const (
	MatchAll MatchStrategy = iota
	MatchAny
)

// String returns "all" or "any", the spelling ParseMatchStrategy accepts.
func (s MatchStrategy) String() string {
	if s == MatchAny {
		return "any"
	}
	return "all"
}

// ParseMatchStrategy parses "all" or "any" (case-insensitive); "" is
// MatchAll.
func ParseMatchStrategy(s string) (MatchStrategy, error) {
	switch strings.ToLower(s) {
	case "", "all":
		return MatchAll, nil
	case "any":
		return MatchAny, nil
	}
	return MatchAll, fmt.Errorf("idp: strategy %q: want all or any", s)
}

// A Guard decides whether an authenticated user may proceed.
type Guard interface {
	Allow(u *User) bool
}

// A NamedGuard names the clause of a rule it checks: "roles",
// "client_roles:<client ID>", "scopes", "groups", "claims",
// "email_domains", "issuers". A refusal reports the name (Verdict.Clause, and the
// "clause" member of the 403 problem+json body); it never holds token
// content. Every guard of this package is one.
type NamedGuard interface {
	Guard
	Clause() string
}

// An IdentityGuard judges the whole verified identity, claims beyond those
// of User included (the claims and e-mail domain guards). Authorize calls
// Judge instead of Allow; Judge reports whether id may proceed and, when
// it may not, the name of the clause that refused it.
type IdentityGuard interface {
	Guard
	Judge(id *Identity) (clause string, ok bool)
}

// GuardFunc adapts a function to Guard.
type GuardFunc func(u *User) bool

// Allow calls f(u).
func (f GuardFunc) Allow(u *User) bool { return f(u) }

type listGuard struct {
	kind     string // "roles", "client_roles", "scopes", "groups"
	clientID string
	strategy MatchStrategy
	items    []string
}

// RequireRoles requires roles (User.RealmRoles: realm_access.roles, or
// the claim the ClaimMapping names), matched exactly
// with strategy s. It panics when no role is given: that is a programming
// error, like an invalid ServeMux pattern.
func RequireRoles(s MatchStrategy, roles ...string) Guard {
	return newListGuard("roles", "", s, roles)
}

// RequireClientRoles requires roles of the client clientID
// (resource_access.<clientID>.roles), matched exactly with strategy s.
func RequireClientRoles(clientID string, s MatchStrategy, roles ...string) Guard {
	if clientID == "" {
		panic("idp: RequireClientRoles needs a client ID")
	}
	return newListGuard("client_roles", clientID, s, roles)
}

// RequireScopes requires scopes (User.Scopes: the scope claim, or the
// claim the ClaimMapping names), matched exactly
// with strategy s.
func RequireScopes(s MatchStrategy, scopes ...string) Guard {
	return newListGuard("scopes", "", s, scopes)
}

// RequireGroups requires groups (User.Groups: the groups claim, or the
// claim the ClaimMapping names), matched exactly with strategy s.
func RequireGroups(s MatchStrategy, groups ...string) Guard {
	return newListGuard("groups", "", s, groups)
}

func newListGuard(kind, clientID string, s MatchStrategy, items []string) Guard {
	if len(items) == 0 {
		panic("idp: Require" + kind + " needs at least one item")
	}
	for _, it := range items {
		if it == "" {
			panic("idp: Require" + kind + ": empty item")
		}
	}
	if s != MatchAll && s != MatchAny {
		panic(fmt.Sprintf("idp: unknown MatchStrategy %d", int(s)))
	}
	return listGuard{kind: kind, clientID: clientID, strategy: s, items: append([]string(nil), items...)}
}

func (g listGuard) Allow(u *User) bool {
	if u == nil {
		return false
	}
	var have []string
	switch g.kind {
	case "roles":
		have = u.RealmRoles
	case "client_roles":
		have = u.ClientRoles[g.clientID]
	case "scopes":
		have = u.Scopes
	case "groups":
		have = u.Groups
	}
	for _, want := range g.items {
		ok := contains(have, want)
		if ok && g.strategy == MatchAny {
			return true
		}
		if !ok && g.strategy == MatchAll {
			return false
		}
	}
	return g.strategy == MatchAll
}

// Clause returns the guard's kind, "client_roles:<client ID>" for client
// roles.
func (g listGuard) Clause() string {
	if g.clientID != "" {
		return g.kind + ":" + g.clientID
	}
	return g.kind
}

// String describes the guard, e.g. "roles(all: admin, editor)".
func (g listGuard) String() string {
	name := g.kind
	if g.clientID != "" {
		name += "[" + g.clientID + "]"
	}
	return name + "(" + g.strategy.String() + ": " + strings.Join(g.items, ", ") + ")"
}
