package idp_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

func b64json(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestVerifyAcceptsKeycloakTokens(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, func(c *idp.Config) { c.Algorithms = []string{"RS256", "ES256"} })
	for _, alg := range []string{"RS256", "ES256"} {
		claims := srv.UserClaims(clientID, "alice", "creator")
		claims["resource_access"] = map[string]any{clientID: map[string]any{"roles": []any{"editor"}}}
		tok := srv.MintWith(idptest.MintOptions{Alg: alg}, claims)
		tp, err := p.Verify(t.Context(), tok)
		if err != nil {
			t.Fatalf("%s: Verify: %v", alg, err)
		}
		if tp.PreferredUsername != "alice" || tp.AuthorizedParty != clientID || tp.Type != "Bearer" ||
			tp.Issuer != srv.Issuer || len(tp.Audience) != 1 || tp.Audience[0] != "account" ||
			tp.ResourceAccess[clientID].Roles[0] != "editor" || tp.Scope != "openid email profile" {
			t.Fatalf("%s: payload = %+v", alg, tp)
		}
		var acr string
		if !tp.Claim("acr", &acr) || acr != "1" {
			t.Fatalf("%s: Claim(acr) = %q", alg, acr)
		}
	}
}

// TestVerifyAccessTokensWithNonce: Keycloak's access tokens may carry the
// login's nonce (with typ "Bearer"), and RFC 9068 access tokens declare
// themselves in the header; neither may be taken for an ID token.
func TestVerifyAccessTokensWithNonce(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, nil)
	good := srv.UserClaims(clientID, "alice")
	for name, tok := range map[string]string{
		"keycloak typ Bearer + nonce": srv.Mint(merge(good, map[string]any{"nonce": "n-1"})),
		"at+jwt header, no typ claim": srv.MintWith(idptest.MintOptions{Header: map[string]any{"typ": "at+jwt"}},
			merge(good, map[string]any{"typ": nil, "nonce": "n-1"})),
		"no typ, no ID-token claims": srv.Mint(merge(good, map[string]any{"typ": nil})),
	} {
		if _, err := p.Verify(t.Context(), tok); err != nil {
			t.Errorf("%s: Verify = %v", name, err)
		}
	}
}

// TestVerifyRejectsAttacks covers the known JWT attacks of DESIGN §8.
func TestVerifyRejectsAttacks(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, func(c *idp.Config) { c.Algorithms = []string{"RS256", "ES256"} })
	good := srv.UserClaims(clientID, "mallory")
	goodTok := srv.Mint(good)
	rsKID, esKID := srv.KID()
	parts := strings.Split(goodTok, ".")

	pubDER, err := x509.MarshalPKIXPublicKey(srv.RSAPublicKey())
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	hmacWith := func(key []byte) string {
		h := b64json(t, map[string]any{"alg": "HS256", "typ": "JWT", "kid": rsKID})
		signing := h + "." + parts[1]
		m := hmac.New(sha256.New, key)
		m.Write([]byte(signing))
		return signing + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	}
	attackerKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	attackerEC, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	esTok := srv.MintWith(idptest.MintOptions{Alg: "ES256"}, good)
	esParts := strings.Split(esTok, ".")
	tamperedPayload := b64json(t, func() map[string]any {
		m := map[string]any{}
		for k, v := range good {
			m[k] = v
		}
		m["iss"] = srv.Issuer
		m["exp"] = time.Now().Add(time.Hour).Unix()
		m["realm_access"] = map[string]any{"roles": []any{"admin"}}
		return m
	}())

	tests := []struct {
		name, token, reason string
	}{
		{"alg none", b64json(t, map[string]any{"alg": "none", "typ": "JWT"}) + "." + parts[1] + ".", ""},
		{"alg none with kid", b64json(t, map[string]any{"alg": "none", "kid": rsKID}) + "." + parts[1] + ".", ""},
		{"HS256 signed with the public key PEM", hmacWith(pubPEM), ""},
		{"HS256 signed with the public key DER", hmacWith(pubDER), ""},
		{"signed by an attacker key, known kid", srv.MintWith(idptest.MintOptions{Key: attackerKey}, good), "invalid signature"},
		{"attacker key with embedded jwk header", srv.MintWith(idptest.MintOptions{Key: attackerKey, KID: "-", Header: map[string]any{
			"jwk": map[string]any{"kty": "RSA", "n": base64.RawURLEncoding.EncodeToString(attackerKey.N.Bytes()), "e": "AQAB"}}}, good), "invalid signature"},
		{"attacker key with jku header", srv.MintWith(idptest.MintOptions{Key: attackerKey, KID: "attacker", Header: map[string]any{"jku": "http://127.0.0.1:1/keys"}}, good), "unknown signing key"},
		{"attacker key with x5u header", srv.MintWith(idptest.MintOptions{Key: attackerKey, Header: map[string]any{"x5u": "http://127.0.0.1:1/cert"}}, good), "invalid signature"},
		{"ES256 by attacker under the real kid", srv.MintWith(idptest.MintOptions{Alg: "ES256", Key: attackerEC}, good), "invalid signature"},
		{"unknown kid", srv.MintWith(idptest.MintOptions{KID: "no-such-kid"}, good), "unknown signing key"},
		{"tampered payload", parts[0] + "." + tamperedPayload + "." + parts[2], "invalid signature"},
		{"ECDSA zero signature", esParts[0] + "." + esParts[1] + "." + base64.RawURLEncoding.EncodeToString(make([]byte, 64)), "invalid signature"},
		{"RS256 header on the EC key", srv.MintWith(idptest.MintOptions{KID: esKID}, good), "algorithm does not match"},
		{"expired", srv.Mint(merge(good, map[string]any{"exp": time.Now().Add(-time.Hour).Unix(), "iat": time.Now().Add(-2 * time.Hour).Unix()})), "token expired"},
		{"no exp", srv.Mint(merge(good, map[string]any{"exp": nil})), "missing required claim"},
		{"not yet valid", srv.Mint(merge(good, map[string]any{"nbf": time.Now().Add(time.Hour).Unix()})), "not yet valid"},
		{"issued in the future", srv.Mint(merge(good, map[string]any{"iat": time.Now().Add(time.Hour).Unix()})), "not yet valid"},
		{"wrong issuer", srv.Mint(merge(good, map[string]any{"iss": srv.URL + "/realms/other"})), "wrong issuer"},
		{"no issuer", srv.Mint(merge(good, map[string]any{"iss": nil})), "missing required claim"},
		{"wrong audience", srv.Mint(merge(good, map[string]any{"aud": "other", "azp": "other"})), "not intended"},
		{"ID token", srv.Mint(merge(good, map[string]any{"typ": "ID", "aud": clientID})), "not an access token"},
		{"refresh token", srv.Mint(merge(good, map[string]any{"typ": "Refresh"})), "not an access token"},
		// ID tokens of providers that set no typ (found against oidc-provider
		// in test/interop): their aud is the client ID, so only their own
		// claims give them away.
		{"untyped ID token with nonce", srv.Mint(merge(good, map[string]any{"typ": nil, "aud": clientID, "nonce": "n-1"})), "ID token"},
		{"ID token with at_hash", srv.Mint(merge(good, map[string]any{"typ": nil, "aud": clientID, "at_hash": "abc"})), "ID token"},
		{"at_hash even with typ Bearer", srv.Mint(merge(good, map[string]any{"at_hash": "abc"})), "ID token"},
		{"ID token with c_hash", srv.Mint(merge(good, map[string]any{"typ": nil, "c_hash": "abc"})), "ID token"},
		{"offline token", srv.Mint(merge(good, map[string]any{"typ": "Offline"})), "not an access token"},
		{"header typ not JWT", srv.MintWith(idptest.MintOptions{Header: map[string]any{"typ": "dpop+jwt"}}, good), "not an access token"},
		{"crit header", srv.MintWith(idptest.MintOptions{Header: map[string]any{"crit": []any{"exp"}}}, good), "critical"},
		{"kid not a string", srv.MintWith(idptest.MintOptions{Header: map[string]any{"kid": 7}}, good), "kid"},
		{"no subject", srv.Mint(merge(good, map[string]any{"sub": nil})), "subject"},
		{"audience of wrong type", srv.Mint(merge(good, map[string]any{"aud": 42})), "malformed"},
		{"oversized", srv.Mint(merge(good, map[string]any{"pad": strings.Repeat("x", 20000)})), "too large"},
		{"garbage", "abc.def.ghi", "malformed"},
		{"two segments", parts[0] + "." + parts[1], "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.Verify(t.Context(), tt.token)
			if !errors.Is(err, idp.ErrInvalidToken) {
				t.Fatalf("Verify = %v, want ErrInvalidToken", err)
			}
			if !strings.Contains(idp.Reason(err), tt.reason) {
				t.Fatalf("reason %q, want it to contain %q (err %v)", idp.Reason(err), tt.reason, err)
			}
		})
	}
}

func merge(base, over map[string]any) map[string]any {
	m := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		m[k] = v
	}
	for k, v := range over {
		m[k] = v
	}
	return m
}

// TestAudienceMatrix is the specification's audience rule (§5.4–5.6).
func TestAudienceMatrix(t *testing.T) {
	srv := idptest.NewServer(t)
	plain := newPlugin(t, srv, nil)
	withOptional := newPlugin(t, srv, func(c *idp.Config) { c.OptionalAudiences = []string{"svc-reporter", "svc-b"} })
	withAudience := newPlugin(t, srv, func(c *idp.Config) { c.Audience = "api://short" })

	tests := []struct {
		name                  string
		aud, azp              any // nil: absent
		plain, opt, audConfig bool
	}{
		{"aud=client string", clientID, nil, true, true, false},
		{"aud=client list", []any{"account", clientID}, nil, true, true, false},
		{"aud=account azp=client (Keycloak user token)", "account", clientID, true, true, false},
		{"aud missing azp=client", nil, clientID, true, true, false},
		{"aud=account azp=svc (service token)", "account", "svc-reporter", false, true, false},
		{"aud list with optional", []any{"x", "svc-b"}, "x", false, true, false},
		{"aud=optional string, azp other", "svc-b", "other", false, true, false},
		{"aud=account azp=other", "account", "other", false, false, false},
		{"aud and azp missing", nil, nil, false, false, false},
		{"aud empty list", []any{}, nil, false, false, false},
		{"aud=configured audience", "api://short", "other", false, false, true},
		{"azp of wrong type", "account", 42, false, false, false},
		{"azp list (wrong type)", "account", []any{clientID}, false, false, false},
		{"aud list with non-string", []any{clientID, 42}, nil, false, false, false},
		{"case differs", "SHORTENER", "Shortener", false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := srv.Mint(map[string]any{"aud": tt.aud, "azp": tt.azp})
			for _, c := range []struct {
				name string
				p    *idp.Plugin
				want bool
			}{{"plain", plain, tt.plain}, {"optional", withOptional, tt.opt}, {"audience", withAudience, tt.audConfig}} {
				_, err := c.p.Verify(t.Context(), tok)
				if got := err == nil; got != c.want {
					t.Errorf("%s plugin: accepted=%v want %v (err %v)", c.name, got, c.want, err)
				}
			}
		})
	}
}

func TestVerifyLeeway(t *testing.T) {
	srv := idptest.NewServer(t)
	strict := newPlugin(t, srv, func(c *idp.Config) { c.Leeway = -1 })
	lenient := newPlugin(t, srv, func(c *idp.Config) { c.Leeway = time.Minute })
	tok := srv.Mint(map[string]any{"aud": clientID, "exp": time.Now().Add(-5 * time.Second).Unix()})
	if _, err := strict.Verify(t.Context(), tok); !errors.Is(err, idp.ErrInvalidToken) {
		t.Fatalf("strict: %v", err)
	}
	if _, err := lenient.Verify(t.Context(), tok); err != nil {
		t.Fatalf("lenient: %v", err)
	}
}

// A plugin made from another's effective Config keeps "no leeway": the
// defaults applied twice must not turn the negative Leeway into the 10 s
// default.
func TestVerifyNoLeewaySurvivesConfig(t *testing.T) {
	srv := idptest.NewServer(t)
	strict := newPlugin(t, srv, func(c *idp.Config) { c.Leeway = -1 })
	if l := strict.Config().Leeway; l >= 0 {
		t.Fatalf("Config().Leeway = %v, want negative (none)", l)
	}
	again := newPlugin(t, srv, func(c *idp.Config) { *c = strict.Config() })
	tok := srv.Mint(map[string]any{"aud": clientID, "exp": time.Now().Add(-5 * time.Second).Unix()})
	if _, err := again.Verify(t.Context(), tok); !errors.Is(err, idp.ErrInvalidToken) {
		t.Fatalf("a token expired 5 s ago passed a plugin made from a no-leeway Config: %v", err)
	}
}

func TestVerifyTokenWithoutKID(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, nil)
	tok := srv.MintWith(idptest.MintOptions{KID: "-"}, map[string]any{"aud": clientID})
	if _, err := p.Verify(t.Context(), tok); err != nil {
		t.Fatalf("Verify without kid: %v", err)
	}
}

func TestVerifyRejectsAlgorithmNotConfigured(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, nil) // RS256 only
	tok := srv.MintWith(idptest.MintOptions{Alg: "ES256"}, map[string]any{"aud": clientID})
	if _, err := p.Verify(t.Context(), tok); !errors.Is(err, idp.ErrInvalidToken) {
		t.Fatalf("ES256 accepted with Algorithms=[RS256]: %v", err)
	}
}

func TestVerifyEmptyToken(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, nil)
	if _, err := p.Verify(t.Context(), ""); !errors.Is(err, idp.ErrNoToken) {
		t.Fatalf("Verify(\"\") = %v, want ErrNoToken", err)
	}
}

func TestVerifiedCacheNeverPastExp(t *testing.T) {
	srv := idptest.NewServer(t)
	now := time.Now()
	clock := func() time.Time { return now }
	p := newPlugin(t, srv, func(c *idp.Config) { c.Now = func() time.Time { return clock() }; c.Leeway = -1 })
	tok := srv.Mint(map[string]any{"aud": clientID, "iat": now.Add(-time.Second).Unix(), "exp": now.Add(30 * time.Second).Unix()})
	if _, err := p.Verify(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	if n := p.Stats().CachedTokens; n != 1 {
		t.Fatalf("cached tokens = %d, want 1", n)
	}
	if _, err := p.Verify(t.Context(), tok); err != nil {
		t.Fatalf("cache hit failed: %v", err)
	}
	clock = func() time.Time { return now.Add(31 * time.Second) }
	if _, err := p.Verify(t.Context(), tok); !errors.Is(err, idp.ErrInvalidToken) {
		t.Fatalf("expired token served from cache: %v", err)
	}
}

func TestVerifiedCacheBounded(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, func(c *idp.Config) { c.VerifiedCacheSize = 64 })
	for i := 0; i < 300; i++ {
		if _, err := p.Verify(t.Context(), srv.Mint(map[string]any{"aud": clientID})); err != nil {
			t.Fatal(err)
		}
	}
	if n := p.Stats().CachedTokens; n > 64 {
		t.Fatalf("cache holds %d entries, bound is 64", n)
	}
}

// The jwt package must reject the "none" method in every spelling even if
// a caller asked for it: our config validation forbids it first.
func TestNoneNeverConfigurable(t *testing.T) {
	for _, alg := range []string{"none", "None", "NONE", jwt.SigningMethodNone.Alg()} {
		_, err := idp.New(t.Context(), idp.Config{ServerURL: "http://x", Realm: "r", ClientID: "c", Algorithms: []string{alg}})
		if err == nil {
			t.Fatalf("algorithm %q accepted", alg)
		}
	}
}

// A token verified again is answered from the cache, by the hot table (the
// identity verified before) or by the shards (the payload decoded again):
// either way the identity equals the first one, field for field.
func TestVerifiedCacheSameIdentity(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, func(c *idp.Config) { c.VerifiedCacheSize = 1000 })
	const n = 600 // more than the hot table's 256 slots: most answers come from the shards
	toks := make([]string, n)
	first := make([]*idp.Identity, n)
	verify := func(tok string) (*idp.Identity, error) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		r, err := p.Authenticate(r)
		if err != nil {
			return nil, err
		}
		id, _ := idp.IdentityFrom(r.Context())
		return id, nil
	}
	for i := range toks {
		c := srv.UserClaims(clientID, fmt.Sprintf("user%d", i), "creator", "reader")
		c["email"], c["email_verified"], c["name"] = fmt.Sprintf("u%d@example.com", i), true, "Ünïcode \"quoted\" name"
		c["resource_access"] = map[string]any{clientID: map[string]any{"roles": []string{"admin"}}, "other": map[string]any{"roles": []string{"x", "y"}}}
		toks[i] = srv.Mint(c)
		id, err := verify(toks[i])
		if err != nil {
			t.Fatal(err)
		}
		first[i] = id
	}
	for round := range 2 {
		for i, tok := range toks {
			id, err := verify(tok)
			if err != nil {
				t.Fatalf("round %d, token %d: %v", round, i, err)
			}
			if id.Raw != tok || !reflect.DeepEqual(id.User, first[i].User) || !reflect.DeepEqual(id.Payload, first[i].Payload) {
				t.Fatalf("round %d, token %d: cached identity differs:\n got %+v\n%+v\nwant %+v\n%+v", round, i, id.User, id.Payload, first[i].User, first[i].Payload)
			}
		}
	}
	if got := p.Stats().CachedTokens; got != n {
		t.Fatalf("cached tokens = %d, want %d", got, n)
	}
}

// A JWK that names its own alg is used for that alg only, even when the
// plugin accepts others for the same key type (RFC 7517 §4.4).
func TestVerifyJWKOwnAlg(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, func(c *idp.Config) { c.Algorithms = []string{"RS256", "RS384", "PS256"} })
	good := srv.UserClaims(clientID, "alice", "creator")
	if _, err := p.Verify(t.Context(), srv.Mint(good)); err != nil {
		t.Fatalf("RS256 token: %v", err)
	}
	for _, alg := range []string{"RS384", "PS256"} {
		tok := srv.MintWith(idptest.MintOptions{Header: map[string]any{"alg": alg}}, good)
		for range 2 { // the second is not served from a cache
			_, err := p.Verify(t.Context(), tok)
			if !errors.Is(err, idp.ErrInvalidToken) || !strings.Contains(idp.Reason(err), "algorithm does not match") {
				t.Fatalf("%s header on the RS256 JWK: %v (reason %q)", alg, err, idp.Reason(err))
			}
		}
	}
}
