package idptest

import (
	"crypto"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// MintOptions select how MintWith signs.
type MintOptions struct {
	// Alg is "RS256" (default) or "ES256", with the server's current key.
	Alg string
	// KID overrides the kid header; "-" omits it.
	KID string
	// Header adds or overrides header fields; a nil value removes one.
	Header map[string]any
	// Key signs with this key instead of the server's (with Alg's method).
	Key crypto.Signer
	// NoDefaults leaves out the claims Mint adds by default.
	NoDefaults bool
}

// Mint signs claims as an access token of the realm with the current RS256
// key. Absent claims get Keycloak's defaults: iss, iat (now), exp (now+5m),
// jti, typ "Bearer", sub. A claim whose value is nil is left out: a token
// shaped like another provider's leaves out typ ("typ": nil) and carries
// that provider's claims as they are (roles, groups, scp, oid, namespaced
// names such as "https://example.com/roles").
func (s *Server) Mint(claims map[string]any) string {
	return s.MintWith(MintOptions{}, claims)
}

// MintWith is Mint with signing options.
func (s *Server) MintWith(o MintOptions, claims map[string]any) string {
	if s.t != nil {
		s.t.Helper()
	}
	tok, err := s.sign(o, claims)
	if err != nil {
		s.fail("%v", err)
	}
	return tok
}

// sign is MintWith returning its error, for use in handlers.
func (s *Server) sign(o MintOptions, claims map[string]any) (string, error) {
	mc := jwt.MapClaims{}
	if !o.NoDefaults {
		now := s.now()
		mc["iss"] = s.Issuer
		mc["iat"] = now.Unix()
		mc["exp"] = now.Add(5 * time.Minute).Unix()
		mc["jti"] = randomHex(16)
		mc["typ"] = "Bearer"
		mc["sub"] = "f7a3c1d2-0000-4000-8000-" + randomHex(6)
	}
	for k, v := range claims {
		if v == nil {
			delete(mc, k)
		} else {
			mc[k] = v
		}
	}
	method, key, header, err := s.signer(o)
	if err != nil {
		return "", err
	}
	tok := jwt.NewWithClaims(method, mc)
	tok.Header = header
	signed, err := tok.SignedString(key)
	if err != nil {
		return "", fmt.Errorf("idptest: sign: %w", err)
	}
	return signed, nil
}

// signer returns the method, key and header o selects.
func (s *Server) signer(o MintOptions) (jwt.SigningMethod, crypto.Signer, map[string]any, error) {
	s.mu.Lock()
	var method jwt.SigningMethod = jwt.SigningMethodRS256
	var key crypto.Signer = s.rsaKey
	kid := s.rsaKID
	if o.Alg == "ES256" {
		method, key, kid = jwt.SigningMethodES256, s.ecKey, s.ecKID
	} else if o.Alg != "" && o.Alg != "RS256" {
		s.mu.Unlock()
		return nil, nil, nil, fmt.Errorf("idptest: MintWith: unsupported Alg %q", o.Alg)
	}
	s.mu.Unlock()
	if o.Key != nil {
		key = o.Key
	}
	header := map[string]any{"alg": method.Alg(), "typ": "JWT", "kid": kid}
	switch o.KID {
	case "":
	case "-":
		delete(header, "kid")
	default:
		header["kid"] = o.KID
	}
	for k, v := range o.Header {
		if v == nil {
			delete(header, k)
		} else {
			header[k] = v
		}
	}
	return method, key, header, nil
}

// MintJSON signs payload, a JSON object, byte for byte as written, as
// MintWith signs claims (o's Alg, KID, Header and Key apply), adding no
// claim: the payload is the token's whole claim set. It makes the tokens
// a JSON encoder cannot, for tests of how a verifier reads them: a claim
// named twice ({"tid":"A","tid":"B"}), escaped names, odd number
// spellings.
func (s *Server) MintJSON(o MintOptions, payload string) string {
	if s.t != nil {
		s.t.Helper()
	}
	method, key, header, err := s.signer(o)
	if err == nil {
		var h []byte
		if h, err = json.Marshal(header); err == nil {
			input := b64(h) + "." + b64([]byte(payload))
			var sig []byte
			if sig, err = method.Sign(input, key); err == nil {
				return input + "." + b64(sig)
			}
		}
	}
	s.fail("idptest: MintJSON: %v", err)
	return ""
}

// UserClaims returns the claims of a Keycloak user access token obtained by
// client for username, with the given realm roles; add or change claims
// before Mint.
func (s *Server) UserClaims(client, username string, realmRoles ...string) map[string]any {
	roles := make([]any, 0, len(realmRoles)+2)
	roles = append(roles, "offline_access", "default-roles-"+s.Realm)
	for _, r := range realmRoles {
		roles = append(roles, r)
	}
	return map[string]any{
		"aud":                "account",
		"azp":                client,
		"sub":                "user-" + username,
		"sid":                randomHex(8),
		"session_state":      randomHex(8),
		"acr":                "1",
		"realm_access":       map[string]any{"roles": roles},
		"resource_access":    map[string]any{"account": map[string]any{"roles": []any{"manage-account", "view-profile"}}},
		"scope":              "openid email profile",
		"email_verified":     true,
		"preferred_username": username,
		"email":              username + "@example.com",
		"name":               username,
	}
}

// GenericClaims returns the claims of an access token shaped like those
// of a provider other than Keycloak (the generic claim mapping of
// pkg/idp reads them): no typ, aud the given audience, sub, preferred_username,
// email, roles (an array of strings) and scope; add or change claims
// before Mint (groups, scp, namespaced claims). Together with
// Options.PlainIssuer, a Server so configured acts as a second, non-Keycloak
// issuer beside another.
func (s *Server) GenericClaims(audience, username string, roles ...string) map[string]any {
	rs := make([]any, len(roles))
	for i, r := range roles {
		rs[i] = r
	}
	return map[string]any{
		"typ":                nil,
		"aud":                audience,
		"sub":                "user-" + username,
		"preferred_username": username,
		"email":              username + "@example.com",
		"roles":              rs,
		"scope":              "openid profile email",
	}
}

// ServiceClaims returns the claims of a Keycloak client_credentials token
// of client c.
func (s *Server) ServiceClaims(c Client) map[string]any {
	roles := make([]any, 0, len(c.RealmRoles))
	for _, r := range c.RealmRoles {
		roles = append(roles, r)
	}
	ra := map[string]any{}
	for client, rs := range c.ClientRoles {
		l := make([]any, len(rs))
		for i, r := range rs {
			l[i] = r
		}
		ra[client] = map[string]any{"roles": l}
	}
	scope := c.Scope
	if scope == "" {
		scope = "profile email"
	}
	return map[string]any{
		"aud":                "account",
		"azp":                c.ID,
		"sub":                "service-" + c.ID,
		"realm_access":       map[string]any{"roles": roles},
		"resource_access":    ra,
		"scope":              scope,
		"preferred_username": "service-account-" + c.ID,
		"clientId":           c.ID,
		"clientHost":         "127.0.0.1",
		"clientAddress":      "127.0.0.1",
		"email_verified":     false,
	}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
