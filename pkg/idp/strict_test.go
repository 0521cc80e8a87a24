package idp_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// rawSigner signs payloads written byte for byte (duplicate names, odd
// types, non-canonical encodings), with a key the provider publishes.
type rawSigner struct {
	key *rsa.PrivateKey
	kid string
}

func newRawSigner(t *testing.T, srv *idptest.Server) rawSigner {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s := rawSigner{key: key, kid: "raw-signer"}
	srv.PublishJWK(map[string]any{
		"kty": "RSA", "kid": s.kid, "alg": "RS256", "use": "sig",
		"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()), "e": "AQAB",
	})
	return s
}

// sign returns header.payload.signature with the segments encoded as given
// by enc (canonical base64url unless a test says otherwise).
func (s rawSigner) sign(t *testing.T, header, payload string, enc func([]byte) string) string {
	t.Helper()
	if enc == nil {
		enc = base64.RawURLEncoding.EncodeToString
	}
	input := enc([]byte(header)) + "." + enc([]byte(payload))
	sig, err := jwt.SigningMethodRS256.Sign(input, s.key)
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + enc(sig)
}

// claimsJSON is a valid access token payload for srv, with extra members
// appended as written.
func claimsJSON(srv *idptest.Server, exp time.Time, extra string) string {
	return fmt.Sprintf(`{"iss":%q,"sub":"u-1","aud":%q,"azp":%q,"typ":"Bearer","exp":%d,"iat":%d%s}`,
		srv.Issuer, clientID, clientID, exp.Unix(), time.Now().Add(-time.Minute).Unix(), extra)
}

func TestClaimNamesAreCaseSensitiveAndUnique(t *testing.T) {
	srv := idptest.NewServer(t, idptest.Options{})
	s := newRawSigner(t, srv)
	p := newPlugin(t, srv, nil)
	header := `{"alg":"RS256","typ":"JWT","kid":"` + s.kid + `"}`
	future, past := time.Now().Add(time.Hour), time.Now().Add(-time.Hour)

	// The exact spelling is the claim; another case is another (unread) name.
	tok := s.sign(t, header, claimsJSON(srv, future,
		`,"realm_access":{"roles":["reader"]},"REALM_ACCESS":{"roles":["admin"]},"Realm_Access":{"ROLES":["admin"]}`), nil)
	tp, err := p.Verify(t.Context(), tok)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got := tp.RealmAccess.Roles; len(got) != 1 || got[0] != "reader" {
		t.Fatalf("realm roles %v, want [reader]: another spelling was read", got)
	}
	// Nested names too: "ROLES" is not "roles".
	tok = s.sign(t, header, claimsJSON(srv, future, `,"realm_access":{"ROLES":["admin"]},"resource_access":{"shortener":{"Roles":["editor"]}}`), nil)
	if tp, err = p.Verify(t.Context(), tok); err != nil || len(tp.RealmAccess.Roles) != 0 || len(tp.ResourceAccess["shortener"].Roles) != 0 {
		t.Fatalf("case-variant nested roles were read: %+v %v", tp, err)
	}

	for name, tc := range map[string]struct{ payload, reason string }{
		"expired exp and a future EXP": {
			fmt.Sprintf(`{"iss":%q,"sub":"u-1","aud":%q,"exp":%d,"EXP":%d}`, srv.Issuer, clientID, past.Unix(), future.Unix()), "token expired"},
		"exp twice":          {claimsJSON(srv, past, fmt.Sprintf(`,"exp":%d`, future.Unix())), "duplicate claim exp"},
		"realm_access twice": {claimsJSON(srv, future, `,"realm_access":{"roles":[]},"realm_access":{"roles":["admin"]}`), "duplicate claim realm_access"},
		"iss twice":          {claimsJSON(srv, future, `,"iss":"https://evil.example.com/realms/demo"`), "duplicate claim iss"},
		"escaped duplicate":  {claimsJSON(srv, future, fmt.Sprintf(`,"\u0065xp":%d`, future.Unix())), "duplicate claim exp"},
		"exp as a string":    {fmt.Sprintf(`{"iss":%q,"sub":"u","aud":%q,"exp":"%d"}`, srv.Issuer, clientID, future.Unix()), "exp must be a number"},
		"nbf as a string":    {claimsJSON(srv, future, `,"nbf":"1"`), "nbf must be a number"},
		"iat as a bool":      {fmt.Sprintf(`{"iss":%q,"sub":"u","aud":%q,"exp":%d,"iat":true}`, srv.Issuer, clientID, future.Unix()), "iat must be a number"},
		"trailing garbage":   {claimsJSON(srv, future, "") + "x", "malformed"},
		"not an object":      {`["iss"]`, "malformed"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := p.Verify(t.Context(), s.sign(t, header, tc.payload, nil))
			if !errors.Is(err, idp.ErrInvalidToken) || !strings.Contains(idp.Reason(err), tc.reason) {
				t.Fatalf("Verify = %v (reason %q), want invalid_token %q", err, idp.Reason(err), tc.reason)
			}
		})
	}
	t.Run("duplicate header parameter", func(t *testing.T) {
		h := `{"alg":"RS256","kid":"` + s.kid + `","kid":"other"}`
		_, err := p.Verify(t.Context(), s.sign(t, h, claimsJSON(srv, future, ""), nil))
		if !errors.Is(err, idp.ErrInvalidToken) || !strings.Contains(idp.Reason(err), "duplicate header") {
			t.Fatalf("Verify = %v", err)
		}
	})
}

// One token, one string: the verified-token cache and any deny-list keyed
// on the string cannot be dodged by another encoding of the same bytes.
func TestTokensMustBeCanonicalBase64url(t *testing.T) {
	srv := idptest.NewServer(t, idptest.Options{})
	s := newRawSigner(t, srv)
	p := newPlugin(t, srv, nil)
	header := `{"alg":"RS256","kid":"` + s.kid + `"}`
	payload := claimsJSON(srv, time.Now().Add(time.Hour), "")
	good := s.sign(t, header, payload, nil)
	if _, err := p.Verify(t.Context(), good); err != nil {
		t.Fatalf("canonical token: %v", err)
	}
	parts := strings.Split(good, ".")
	// A segment whose length leaves spare bits, with one of them set.
	flipLast := func(seg string) string {
		const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
		if len(seg)%4 == 0 {
			return ""
		}
		last := strings.IndexByte(alphabet, seg[len(seg)-1])
		return seg[:len(seg)-1] + string(alphabet[last|1])
	}
	var variants []string
	for i, seg := range parts {
		if f := flipLast(seg); f != "" && f != seg {
			v := append([]string(nil), parts...)
			v[i] = f
			variants = append(variants, strings.Join(v, "."))
		}
	}
	if len(variants) == 0 {
		t.Fatal("no segment with spare bits: the test cannot show anything")
	}
	padded := s.sign(t, header, payload, base64.URLEncoding.EncodeToString) // with '=' padding
	std := s.sign(t, header, payload+" ", base64.StdEncoding.EncodeToString)
	variants = append(variants, padded, std, parts[0]+"\n."+parts[1]+"."+parts[2], parts[0]+"."+parts[1]+"."+parts[2]+"=")
	for _, v := range variants {
		if v == good {
			continue
		}
		if _, err := p.Verify(t.Context(), v); !errors.Is(err, idp.ErrInvalidToken) {
			t.Errorf("non-canonical form %q accepted (err %v)", v[len(v)-12:], err)
		}
	}
}
