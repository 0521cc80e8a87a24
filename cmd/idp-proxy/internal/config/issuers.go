package config

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// Issuer is one entry of idp.issuers: a further trusted issuer whose
// bearer tokens are accepted beside the primary one (idp.TrustedIssuer).
// Browser sign-in, sessions and the /auth routes keep the primary issuer.
type Issuer struct {
	// Name identifies the issuer in routes[].issuers, the access log and
	// the metrics. Required, unique, not idp.issuer_name.
	Name string `mapstructure:"name"`
	// IssuerURL is the issuer exactly as its tokens carry it; it
	// excludes ServerURL and Realm, the Keycloak shorthand.
	IssuerURL string `mapstructure:"issuer_url"`
	ServerURL string `mapstructure:"server_url"`
	Realm     string `mapstructure:"realm"`
	// Audiences are the aud (or azp) values accepted. Required.
	Audiences []string `mapstructure:"audiences"`
	// Claims says where the identity is read from this issuer's tokens.
	// [preset keycloak]
	Claims Claims `mapstructure:"claims"`
	// Algorithms are the accepted signature algorithms. [RS256]
	Algorithms []string `mapstructure:"algorithms"`
	// JWKSCacheTTL is how long this issuer's keys are cached.
	// [idp.jwks_cache_ttl]
	JWKSCacheTTL time.Duration `mapstructure:"jwks_cache_ttl"`
	// UnknownKIDRefreshInterval is the least time between two refetches
	// of this issuer's keys for unknown kids: its own budget. [1s]
	UnknownKIDRefreshInterval time.Duration `mapstructure:"unknown_kid_refresh_interval"`
}

// trustedIssuers returns the idp.issuers section as idp.TrustedIssuer
// values.
func (c IDP) trustedIssuers() []idp.TrustedIssuer {
	if len(c.Issuers) == 0 {
		return nil
	}
	out := make([]idp.TrustedIssuer, len(c.Issuers))
	for i, is := range c.Issuers {
		out[i] = idp.TrustedIssuer{
			Name:                      is.Name,
			IssuerURL:                 is.IssuerURL,
			ServerURL:                 is.ServerURL,
			Realm:                     is.Realm,
			Audiences:                 is.Audiences,
			Claims:                    is.Claims.mapping(),
			Algorithms:                is.Algorithms,
			JWKSCacheTTL:              is.JWKSCacheTTL,
			UnknownKIDRefreshInterval: is.UnknownKIDRefreshInterval,
		}
	}
	return out
}

// routeIssuersKey matches the key of a rule's issuers list and of its
// CORS policy's settings.
var routeIssuersKey = regexp.MustCompile(`^routes\[\d+\]\.(issuers|cors(\..+)?)$`)

// locate gives the problems of idp.issuers (idp.IssuerConfigError),
// idp.issuer_name, routes[].issuers and routes[].cors the position of their key in the file (file:line:column),
// as *KeyError values naming the key, so that check-config points at the
// line to fix. Other problems are left as they are.
func (f File) locate(err error) error {
	if err == nil {
		return nil
	}
	leaves := flatten(err)
	changed := false
	for i, e := range leaves {
		var ice *idp.IssuerConfigError
		var ke *KeyError
		switch {
		case errors.As(e, &ice):
			key := fileKey(fmt.Sprintf("Issuers[%d].%s", ice.Index, ice.Field))
			if key == "" {
				key = fmt.Sprintf("idp.issuers[%d]", ice.Index)
			}
			leaves[i] = &KeyError{Key: key, Err: f.at(key, e)}
			changed = true
		case errors.As(e, &ke) && (routeIssuersKey.MatchString(ke.Key) || ke.Key == "idp.issuer_name" || strings.HasPrefix(ke.Key, "tls.")):
			leaves[i] = &KeyError{Key: ke.Key, Also: ke.Also, Err: f.at(ke.Key, ke.Err)}
			changed = true
		}
	}
	if !changed {
		return err
	}
	return errors.Join(leaves...)
}

// at prefixes err with the position of key in the file ("proxy: config
// FILE:LINE:COL: "), or of the closest enclosing key present; err is
// returned as it is without a file.
func (f File) at(key string, err error) error {
	n := nodeAt(f.doc, key)
	if n == nil {
		return err
	}
	msg := strings.TrimPrefix(err.Error(), "proxy: ")
	return fmt.Errorf("proxy: config %s:%d:%d: %s", f.path, n.Line, n.Column, msg)
}

// nodeAt returns the node of the dotted key ("idp.issuers[1].audiences",
// "routes[3].issuers") in the parsed document: the key's own node, or,
// when it is absent, the deepest enclosing one present; nil without a
// document.
func nodeAt(doc *yaml.Node, key string) *yaml.Node {
	if doc == nil || len(doc.Content) == 0 {
		return nil
	}
	cur, found := doc.Content[0], (*yaml.Node)(nil)
	for _, part := range strings.Split(key, ".") {
		name, idx := part, -1
		if i := strings.IndexByte(part, '['); i >= 0 && strings.HasSuffix(part, "]") {
			n, err := strconv.Atoi(part[i+1 : len(part)-1])
			if err != nil {
				return found
			}
			name, idx = part[:i], n
		}
		if cur.Kind != yaml.MappingNode {
			return found
		}
		var val *yaml.Node
		for j := 0; j+1 < len(cur.Content); j += 2 {
			if cur.Content[j].Value == name {
				found, val = cur.Content[j], cur.Content[j+1]
				break
			}
		}
		if val == nil {
			return found
		}
		cur = val
		if idx >= 0 {
			if cur.Kind != yaml.SequenceNode || idx >= len(cur.Content) {
				return found
			}
			cur = cur.Content[idx]
			found = cur
		}
	}
	return found
}
