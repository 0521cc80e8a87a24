package assert_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/assert"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// clock is a settable time shared by a Signer and the verifying plugin.
type clock struct{ t atomic.Int64 }

func (c *clock) now() time.Time      { return time.Unix(c.t.Load(), 0) }
func (c *clock) set(t time.Time)     { c.t.Store(t.Unix()) }
func (c *clock) add(d time.Duration) { c.t.Add(int64(d / time.Second)) }
func newClock(t time.Time) *clock    { c := &clock{}; c.set(t); return c }

func mustKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// issuerServer serves s's Handler on loopback; the signer is made once
// the URL is known.
type issuerServer struct {
	srv    *httptest.Server
	signer atomic.Pointer[assert.Signer]
}

func newIssuerServer(t *testing.T) *issuerServer {
	is := &issuerServer{}
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		is.signer.Load().Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(is.srv.Close)
	return is
}

func (is *issuerServer) newSigner(t *testing.T, c *clock, keys ...assert.Key) *assert.Signer {
	t.Helper()
	s, err := assert.NewSigner(assert.Options{Issuer: is.srv.URL + "/assertions", Keys: keys, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	is.signer.Store(s)
	return s
}

func verifier(t *testing.T, issuer, audience string, c *clock) *idp.Plugin {
	t.Helper()
	p, err := idp.New(t.Context(), idp.Config{
		IssuerURL: issuer, ClientID: audience, Algorithms: []string{"ES256"},
		Claims: idp.ClaimMapping{Preset: idp.PresetGeneric}, Now: c.now, Leeway: -1,
		UnknownKIDRefreshInterval: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if err := p.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAssertionVerifiedByPkgIDP(t *testing.T) {
	c := newClock(time.Now())
	is := newIssuerServer(t)
	s := is.newSigner(t, c, assert.Key{Signer: mustKey(t)})
	p := verifier(t, s.Issuer(), "grafana", c)
	raw, exp, err := s.Sign(assert.Claims{Audience: "grafana", Subject: "u1", Username: "alice", Email: "alice@example.com",
		Roles: []string{"admin"}, Groups: []string{"ops"}, IssuerName: "corp", ACR: "1", AMR: []string{"pwd"}, AuthTime: c.now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if want := c.now().Add(assert.DefaultLifetime); !exp.Equal(want) {
		t.Errorf("exp %v, want %v", exp, want)
	}
	id, err := p.VerifyIdentity(t.Context(), raw)
	if err != nil {
		t.Fatalf("the real assertion is refused: %v", err)
	}
	u := id.User
	if u.Sub != "u1" || u.PreferredUsername != "alice" || u.Email != "alice@example.com" ||
		strings.Join(u.RealmRoles, ",") != "admin" || strings.Join(u.Groups, ",") != "ops" {
		t.Errorf("user %+v", u)
	}
	var name, acr string
	var amr []string
	var authTime int64
	if !id.Payload.Claim("issuer_name", &name) || name != "corp" || !id.Payload.Claim("acr", &acr) || acr != "1" ||
		!id.Payload.Claim("amr", &amr) || len(amr) != 1 || !id.Payload.Claim("auth_time", &authTime) || authTime == 0 {
		t.Errorf("issuer_name %q acr %q amr %v auth_time %d", name, acr, amr, authTime)
	}
	hdr, _, _ := jwt.NewParser().ParseUnverified(raw, jwt.MapClaims{})
	if hdr.Header["typ"] != "JWT" || hdr.Header["kid"] == "" || hdr.Header["alg"] != "ES256" {
		t.Errorf("header %v", hdr.Header)
	}
}

func TestForgedAssertionsRefused(t *testing.T) {
	c := newClock(time.Now())
	is := newIssuerServer(t)
	key := mustKey(t)
	s := is.newSigner(t, c, assert.Key{Signer: key})
	p := verifier(t, s.Issuer(), "grafana", c)
	claims := assert.Claims{Audience: "grafana", Subject: "u1"}

	other, err := assert.NewSigner(assert.Options{Issuer: s.Issuer(), Keys: []assert.Key{{Signer: mustKey(t)}}, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	expired, _, _ := s.Sign(claims)
	real, _, _ := s.Sign(claims)
	// same kid, alg none
	parts := strings.Split(real, ".")
	none := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"iss": s.Issuer(), "aud": "grafana", "sub": "u1", "exp": c.now().Add(time.Minute).Unix()})
	none.Header["kid"] = headerKID(t, real)
	noneRaw, _ := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	// the caller's own token, from its provider
	provider := idptest.NewServer(t)
	callers := provider.MintWith(idptest.MintOptions{Alg: "ES256"}, map[string]any{"aud": "grafana", "sub": "u1"})
	tampered := parts[0] + "." + strings.TrimRight(parts[1], "=") + "x." + parts[2]

	c.add(assert.DefaultLifetime + time.Second) // only expired is past: sign the others now
	real, _, _ = s.Sign(claims)
	otherKey, _, _ := other.Sign(claims)
	wrongAud, _, _ := s.Sign(assert.Claims{Audience: "wiki", Subject: "u1"})
	for name, raw := range map[string]string{"another key": otherKey, "wrong aud": wrongAud, "expired": expired,
		"alg none": noneRaw, "the caller's own token": callers, "tampered": tampered, "empty": ""} {
		if _, err := p.Verify(t.Context(), raw); err == nil || !errors.Is(err, idp.ErrInvalidToken) && !errors.Is(err, idp.ErrNoToken) {
			t.Errorf("%s: accepted or wrong error: %v", name, err)
		}
	}
	if _, err := p.Verify(t.Context(), real); err != nil {
		t.Errorf("real: %v", err)
	}
}

func headerKID(t *testing.T, raw string) string {
	t.Helper()
	tok, _, err := jwt.NewParser().ParseUnverified(raw, jwt.MapClaims{})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Header["kid"].(string)
}

// TestRotationWithoutFailure signs every second across a rotation (the
// next key published ahead of its Not-Before, the old one kept until its
// last assertion expires, then removed) and verifies every assertion.
func TestRotationWithoutFailure(t *testing.T) {
	start := time.Now().Truncate(time.Second)
	c := newClock(start)
	is := newIssuerServer(t)
	k1 := assert.Key{Signer: mustKey(t)}
	k2 := assert.Key{Signer: mustKey(t), NotBefore: start.Add(2 * time.Minute)}
	s := is.newSigner(t, c, k1)
	p := verifier(t, s.Issuer(), "grafana", c)
	claims := assert.Claims{Audience: "grafana", Subject: "u1"}
	kids := map[string]bool{}
	var held []string // assertions an upstream still holds, checked again later
	for sec := 0; sec < 5*60; sec++ {
		switch sec {
		case 30: // publish the next key (a reload after the file gained it)
			s = is.newSigner(t, c, k1, k2)
		case 4 * 60: // k2 signs since 2m; k1's last assertion expired at 3m
			s = is.newSigner(t, c, k2)
		}
		raw, _, err := s.Sign(claims)
		if err != nil {
			t.Fatal(err)
		}
		kids[headerKID(t, raw)] = true
		held = append(held, raw)
		for _, h := range held {
			if _, err := p.Verify(t.Context(), h); err != nil {
				t.Fatalf("second %d: a valid assertion is refused: %v", sec, err)
			}
		}
		held = unexpired(held, c.now().Add(time.Second))
		c.add(time.Second)
	}
	if len(kids) != 2 {
		t.Errorf("signed with %d keys, want 2", len(kids))
	}
}

// unexpired keeps the assertions still valid at t.
func unexpired(raws []string, t time.Time) []string {
	var kept []string
	for _, r := range raws {
		var mc jwt.MapClaims
		_, _, _ = jwt.NewParser().ParseUnverified(r, &mc)
		if exp, _ := mc.GetExpirationTime(); exp != nil && exp.After(t) {
			kept = append(kept, r)
		}
	}
	return kept
}

func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.pem")
	keys, err := assert.LoadOrCreateKeys(path)
	if err != nil || len(keys) != 1 {
		t.Fatalf("LoadOrCreateKeys: %v, %d keys", err, len(keys))
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v: %v", fi.Mode(), err)
	}
	again, err := assert.LoadOrCreateKeys(path)
	if err != nil || !again[0].Signer.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(keys[0].Signer.Public()) {
		t.Fatalf("a second load made another key: %v", err)
	}
	nb := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	next, _ := assert.EncodeKey(assert.Key{Signer: mustKey(t), NotBefore: nb})
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.Write(next)
	f.Close()
	keys, err = assert.LoadKeys(path)
	if err != nil || len(keys) != 2 || !keys[1].NotBefore.Equal(nb) {
		t.Fatalf("rotated file: %v %+v", err, keys)
	}
	// SEC 1 "EC PRIVATE KEY" (Helm's genPrivateKey "ecdsa") loads too.
	der, _ := x509.MarshalECPrivateKey(mustKey(t))
	if ks, err := assert.ParseKeys(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})); err != nil || len(ks) != 1 {
		t.Errorf("SEC 1 key: %v", err)
	}
	for name, data := range map[string]string{
		"empty":       "",
		"certificate": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
		"bad date":    strings.Replace(string(next), "2026-12-01T00:00:00Z", "tomorrow", 1),
	} {
		if _, err := assert.ParseKeys([]byte(data)); !errors.Is(err, assert.ErrKeys) {
			t.Errorf("%s: %v, want ErrKeys", name, err)
		}
	}
}

func TestDiscoveryDocument(t *testing.T) {
	c := newClock(time.Now())
	is := newIssuerServer(t)
	s := is.newSigner(t, c, assert.Key{Signer: mustKey(t)})
	resp, err := http.Get(s.Issuer() + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d["issuer"] != s.Issuer() || d["jwks_uri"] != s.JWKSURL() {
		t.Errorf("discovery %v", d)
	}
	if algs, _ := d["id_token_signing_alg_values_supported"].([]any); len(algs) != 1 || algs[0] != "ES256" {
		t.Errorf("algs %v", d["id_token_signing_alg_values_supported"])
	}
	r, _ := http.Post(s.JWKSURL(), "text/plain", nil)
	if r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST JWKS: %d", r.StatusCode)
	}
	r.Body.Close()
	for _, bad := range []string{"", "ftp://x", "http://example.com", "https://x/?q=1"} {
		if _, err := assert.NewSigner(assert.Options{Issuer: bad, Keys: []assert.Key{{Signer: mustKey(t)}}}); !errors.Is(err, assert.ErrConfig) {
			t.Errorf("issuer %q: %v", bad, err)
		}
	}
}
