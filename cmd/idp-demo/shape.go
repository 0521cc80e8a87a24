package main

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// A Shape is the provider the development provider imitates: Keycloak's
// realm (the default), or an issuer that is not a Keycloak realm, whose
// access tokens carry another provider's claims, so that the proxy is
// configured as for that provider (idp.issuer_url and a claim mapping).
type Shape string

// The shapes of --shape.
const (
	// ShapeKeycloak is a Keycloak realm: {provider}/realms/demo, Keycloak's
	// claims (realm_access.roles, ...), the keycloak claim preset.
	ShapeKeycloak Shape = "keycloak"
	// ShapeEntra is Microsoft Entra ID's v2.0 access tokens: a plain
	// issuer, aud the API's client ID, app roles in roles, delegated scopes
	// in scp, the sign-in name in preferred_username, oid and tid GUIDs, a
	// pairwise sub; the generic preset.
	ShapeEntra Shape = "entra"
	// ShapeAuth0 is Auth0's: sub "auth0|..." (or "<client>@clients"), roles
	// only in a namespaced claim (an Action's), RBAC permissions, no
	// username claim; the generic preset reading those two.
	ShapeAuth0 Shape = "auth0"
	// ShapeGeneric is the common shape of other providers (Okta, Dex,
	// Zitadel with a roles claim...): sub, preferred_username, email,
	// roles, scope; the generic preset.
	ShapeGeneric Shape = "generic"
)

// Shapes lists the shapes, for --help.
var Shapes = []Shape{ShapeKeycloak, ShapeEntra, ShapeAuth0, ShapeGeneric}

// Claims the demo's non-Keycloak shapes write.
const (
	// auth0RolesClaim is the namespaced claim an Auth0 Action would write
	// the user's roles to.
	auth0RolesClaim = "https://idp-demo.test/roles"
	// entraTenantID is the demo's Entra tenant (tid).
	entraTenantID = "9188040d-6c67-4c5b-b112-36a304b66dad"
)

// ParseShape parses a --shape value; "" is ShapeKeycloak.
func ParseShape(s string) (Shape, error) {
	if s == "" {
		return ShapeKeycloak, nil
	}
	for _, sh := range Shapes {
		if Shape(s) == sh {
			return sh, nil
		}
	}
	return "", fmt.Errorf("unknown shape %q: want one of %s", s, shapeList())
}

func shapeList() string {
	names := make([]string, len(Shapes))
	for i, s := range Shapes {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// plain reports whether the provider is a plain issuer rather than a
// Keycloak realm.
func (s Shape) plain() bool { return s != ShapeKeycloak && s != "" }

// ClaimMapping is the proxy's idp.claims for the shape: what the README's
// Providers section gives for that provider.
func (s Shape) ClaimMapping() idp.ClaimMapping {
	switch s {
	case ShapeEntra, ShapeGeneric:
		return idp.ClaimMapping{Preset: idp.PresetGeneric}
	case ShapeAuth0:
		return idp.ClaimMapping{Preset: idp.PresetGeneric, Roles: auth0RolesClaim, Scopes: "permissions"}
	}
	return idp.ClaimMapping{}
}

// claimsYAML is ClaimMapping as idp-proxy's configuration writes it.
func (s Shape) claimsYAML() string {
	switch s {
	case ShapeEntra, ShapeGeneric:
		return "{preset: generic}"
	case ShapeAuth0:
		return `{preset: generic, roles: "` + auth0RolesClaim + `", scopes: permissions}`
	}
	return "{preset: keycloak}"
}

// hook returns the provider's claims hook that reshapes its Keycloak
// access tokens (the authorization-code flow's and client_credentials')
// into the shape's; nil for Keycloak.
func (s Shape) hook(issuer string) idptest.ClaimsHook {
	if !s.plain() {
		return nil
	}
	return func(typ string, c map[string]any) {
		if typ != "Bearer" {
			return // ID and refresh tokens keep the provider's own shape
		}
		out := s.reshape(issuer, c)
		for k := range c {
			delete(c, k)
		}
		// idptest adds Keycloak's typ and jti to absent claims: a nil
		// leaves them out.
		c["typ"], c["jti"] = nil, nil
		for k, v := range out {
			c[k] = v
		}
	}
}

// reshape returns the shape's access-token claims for the Keycloak claims
// c of a user (the authorization-code flow) or of a service account
// (client_credentials, recognised by its clientId claim).
func (s Shape) reshape(issuer string, c map[string]any) map[string]any {
	str := func(k string) string { v, _ := c[k].(string); return v }
	_, app := c["clientId"]
	sub, client := str("sub"), str("azp")
	iat, ok := c["iat"]
	if !ok {
		iat = time.Now().Unix()
	}
	roles := appRoles(c)
	out := map[string]any{"iss": issuer, "exp": c["exp"], "iat": iat, "azp": client}
	username := str("preferred_username")
	switch s {
	case ShapeEntra:
		oid := guid("oid:" + sub)
		out["aud"], out["ver"], out["tid"], out["oid"], out["nbf"] = WebClientID, "2.0", entraTenantID, oid, iat
		out["sub"] = pairwise(oid, client)
		out["roles"] = roles
		if app {
			out["idtyp"] = "app"
		} else {
			out["preferred_username"], out["name"] = str("email"), displayName(username)
			out["scp"] = scopesWithout(str("scope"), "openid", "profile", "email", "offline_access")
		}
	case ShapeAuth0:
		out[auth0RolesClaim] = roles
		perms := []any{"read:links"}
		if len(roles) > 0 {
			perms = append(perms, "create:links")
		}
		out["permissions"] = perms
		if app {
			out["sub"], out["aud"], out["gty"] = client+"@clients", WebClientID, "client-credentials"
		} else {
			out["sub"], out["aud"], out["scope"] = "auth0|"+sub, []any{WebClientID, issuer + "/userinfo"}, str("scope")
		}
	default: // ShapeGeneric
		out["sub"], out["aud"], out["roles"], out["scope"] = sub, WebClientID, roles, str("scope")
		if !app {
			out["preferred_username"], out["email"], out["email_verified"] = username, str("email"), true
		}
	}
	return out
}

// appRoles are the realm roles of Keycloak claims c without Keycloak's
// own (offline_access, default-roles-<realm>): the roles an app was given.
func appRoles(c map[string]any) []any {
	ra, _ := c["realm_access"].(map[string]any)
	rs, _ := ra["roles"].([]any)
	out := []any{}
	for _, r := range rs {
		if s, _ := r.(string); s != "" && s != "offline_access" && !strings.HasPrefix(s, "default-roles-") {
			out = append(out, s)
		}
	}
	return out
}

// guid is a stable GUID-shaped ID derived from seed, as Entra's object
// IDs look.
func guid(seed string) string {
	h := sha256.Sum256([]byte(seed))
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// pairwise is Entra's sub: an ID of the user for one application.
func pairwise(oid, client string) string {
	h := sha256.Sum256([]byte(oid + ":" + client))
	return base64.RawURLEncoding.EncodeToString(h[:])[:43]
}

func displayName(username string) string {
	if username == "" {
		return ""
	}
	return strings.ToUpper(username[:1]) + username[1:] + " Example"
}

func scopesWithout(scope string, drop ...string) string {
	var keep []string
	for _, s := range strings.Fields(scope) {
		if !slices.Contains(drop, s) {
			keep = append(keep, s)
		}
	}
	if len(keep) == 0 {
		return "Links.ReadWrite"
	}
	return strings.Join(keep, " ")
}
