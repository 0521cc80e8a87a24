package config

import (
	"errors"
	"strings"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// Claims is the idp.claims section: where the username, e-mail, roles,
// groups and scopes are read from a token (idp.ClaimMapping). Each path
// overrides the preset's for its field; "" keeps the preset's.
type Claims struct {
	Preset   string `mapstructure:"preset"`   // keycloak|generic ["keycloak"]
	Username string `mapstructure:"username"` // claim path of a string
	Email    string `mapstructure:"email"`    // claim path of a string
	Roles    string `mapstructure:"roles"`    // claim path of an array of strings, or keys(path)
	Groups   string `mapstructure:"groups"`   // as roles
	Scopes   string `mapstructure:"scopes"`   // as roles, or a space-separated string
}

// mapping returns the section as an idp.ClaimMapping.
func (c Claims) mapping() idp.ClaimMapping {
	return idp.ClaimMapping{
		Preset:   idp.ClaimPreset(strings.ToLower(c.Preset)),
		Username: c.Username,
		Email:    c.Email,
		Roles:    c.Roles,
		Groups:   c.Groups,
		Scopes:   c.Scopes,
	}
}

// validate reports an unknown preset and every path that does not parse,
// each under its own key.
func (c Claims) validate(bad func(k []string, format string, args ...any)) {
	if _, err := idp.ParseClaimPreset(strings.ToLower(c.Preset)); err != nil {
		bad(keys("idp.claims.preset"), "idp.claims.preset %q: want keycloak or generic", c.Preset)
	}
	for _, f := range []struct{ key, path string }{
		{"idp.claims.username", c.Username},
		{"idp.claims.email", c.Email},
		{"idp.claims.roles", c.Roles},
		{"idp.claims.groups", c.Groups},
		{"idp.claims.scopes", c.Scopes},
	} {
		if f.path == "" {
			continue
		}
		cp, err := idp.ParseClaimPath(f.path)
		var pe *idp.ClaimPathError
		switch {
		case errors.As(err, &pe):
			bad(keys(f.key), "%s %q: %s (at byte %d); names with '.' are written [\"a.b\"], see README, Claim mapping", f.key, f.path, pe.Reason, pe.Offset)
		case err != nil:
			bad(keys(f.key), "%s: %v", f.key, err)
		case cp.Keys() && (f.key == "idp.claims.username" || f.key == "idp.claims.email"):
			bad(keys(f.key), "%s %q: keys(...) names a list; want the path of one string", f.key, f.path)
		}
	}
}

// valid reports whether validate finds nothing.
func (c Claims) valid() bool {
	ok := true
	c.validate(func([]string, string, ...any) { ok = false })
	return ok
}
