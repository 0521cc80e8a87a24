package dpop

import (
	"context"
	"crypto/ecdsa"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

var ctx = context.Background()

// Each algorithm's valid proof verifies, and Proof reports what it holds.
func TestVerify_ValidProofs(t *testing.T) {
	for _, c := range []struct{ key, alg string }{
		{"P-256", "ES256"}, {"P-384", "ES384"}, {"P-521", "ES512"},
		{"RSA", "RS256"}, {"RSA", "RS384"}, {"RSA", "RS512"},
		{"RSA", "PS256"}, {"RSA", "PS384"}, {"RSA", "PS512"}, {"Ed25519", "EdDSA"},
	} {
		t.Run(c.alg, func(t *testing.T) {
			v := newTestVerifier(t, Options{})
			p, err := v.Verify(ctx, testRequest(defaultParts().withKey(c.key, c.alg).encode(t)))
			if err != nil {
				t.Fatal(err)
			}
			jkt, _ := ThumbprintOfKey(key(c.key).Public())
			if p.JKT != jkt || p.JTI != "jti-1" || p.Alg != c.alg || !p.IssuedAt.Equal(testNow) {
				t.Fatalf("Proof = %+v", p)
			}
		})
	}
}

// RFC 9449 §4.3 step 1: "there is not more than one DPoP HTTP request
// header field".
func TestVerify_RFC9449_4_3_1_OneHeader(t *testing.T) {
	v := newTestVerifier(t, Options{})
	proof := defaultParts().encode(t)
	for name, proofs := range map[string][]string{
		"none": nil, "two": {proof, proof}, "comma-joined": {proof + "," + proof},
	} {
		t.Run(name, func(t *testing.T) {
			r := testRequest("")
			r.Proofs = proofs
			_, err := v.Verify(ctx, r)
			check := CheckCount
			if name == "comma-joined" {
				check = CheckSyntax
			}
			wantRefused(t, err, CodeInvalidProof, check)
		})
	}
}

// A proof over Options.MaxProofBytes is refused before it is decoded.
func TestVerify_MaxProofBytes(t *testing.T) {
	v := newTestVerifier(t, Options{MaxProofBytes: 300})
	_, err := v.Verify(ctx, testRequest(defaultParts().encode(t)))
	wantRefused(t, err, CodeInvalidProof, CheckSize)
}

// RFC 9449 §4.3 step 2: "the DPoP HTTP request header field value is a
// single and well-formed JWT"; RFC 7515 §7.1, RFC 7519 §7.2, RFC 7493
// §2.3 (no member name twice).
func TestVerify_RFC9449_4_3_2_WellFormedJWT(t *testing.T) {
	v := newTestVerifier(t, Options{})
	good := defaultParts().encode(t)
	parts := strings.Split(good, ".")
	enc := base64.RawURLEncoding.EncodeToString
	k := key("P-256")
	jwk, _ := canonicalJWK(k.Public())
	hdr := `{"typ":"dpop+jwt","alg":"ES256","jwk":` + string(jwk) + `}`
	claims := `{"jti":"a","htm":"GET","htu":"` + testURL + `","iat":1800000000,"ath":"` + AccessTokenHash(testToken) + `"}`
	signed := func(h, c string) string { return signRaw(t, k, "ES256", []byte(h), []byte(c)) }
	for name, proof := range map[string]string{
		"two parts":          parts[0] + "." + parts[1],
		"four parts":         good + ".x",
		"empty signature":    parts[0] + "." + parts[1] + ".",
		"empty header":       "." + parts[1] + "." + parts[2],
		"padding":            parts[0] + "=." + parts[1] + "." + parts[2],
		"standard base64":    parts[0] + "." + parts[1] + "." + strings.NewReplacer("-", "+", "_", "/").Replace(parts[2]) + "+",
		"line break":         parts[0] + "\n." + parts[1] + "." + parts[2],
		"header not object":  enc([]byte(`["typ"]`)) + "." + parts[1] + "." + parts[2],
		"payload not JSON":   signed(hdr, `{"jti":"a",}`),
		"payload trailing":   signed(hdr, claims+`{}`),
		"duplicate header":   signed(`{"typ":"dpop+jwt","alg":"ES256","alg":"ES256","jwk":`+string(jwk)+`}`, claims),
		"duplicate claim":    signed(hdr, `{"jti":"a","jti":"b","htm":"GET","htu":"`+testURL+`","iat":1800000000}`),
		"duplicate in jwk":   signed(`{"typ":"dpop+jwt","alg":"ES256","jwk":`+strings.Replace(string(jwk), `"kty":"EC"`, `"kty":"EC","kty":"EC"`, 1)+`}`, claims),
		"escaped duplicate":  signed(hdr, `{"jti":"a","j\u0074i":"b","htm":"GET","htu":"`+testURL+`","iat":1800000000}`),
		"crit header":        signed(`{"typ":"dpop+jwt","alg":"ES256","crit":["exp"],"jwk":`+string(jwk)+`}`, claims),
		"non-canonical bits": parts[0] + "." + parts[1] + "." + parts[2][:len(parts[2])-1] + flipLastBits(parts[2]),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := v.Verify(ctx, testRequest(proof))
			wantRefused(t, err, CodeInvalidProof, CheckSyntax)
		})
	}
}

// flipLastBits returns the last character of a base64url string with
// its unused low bits set: the same bytes, another encoding.
func flipLastBits(s string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, s[len(s)-1])
	return string(alphabet[i|1]) // 64-byte ES256 signature: 86 chars, 4 unused bits, all zero
}

// RFC 9449 §4.3 step 3: "all required claims per Section 4.2 are
// contained in the JWT", of their types.
func TestVerify_RFC9449_4_3_3_RequiredClaims(t *testing.T) {
	v := newTestVerifier(t, Options{})
	for _, c := range []struct {
		name, check string
		set         func(c map[string]any)
	}{
		{"no jti", CheckJTI, func(c map[string]any) { delete(c, "jti") }},
		{"empty jti", CheckJTI, func(c map[string]any) { c["jti"] = "" }},
		{"long jti", CheckJTI, func(c map[string]any) { c["jti"] = strings.Repeat("j", MaxJTILength+1) }},
		{"numeric jti", CheckJTI, func(c map[string]any) { c["jti"] = 7 }},
		{"no htm", CheckHTM, func(c map[string]any) { delete(c, "htm") }},
		{"htm array", CheckHTM, func(c map[string]any) { c["htm"] = []string{"GET"} }},
		{"no htu", CheckHTU, func(c map[string]any) { delete(c, "htu") }},
		{"no iat", CheckIAT, func(c map[string]any) { delete(c, "iat") }},
		{"iat string", CheckIAT, func(c map[string]any) { c["iat"] = "1800000000" }},
		{"ath number", CheckATH, func(c map[string]any) { c["ath"] = 1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := defaultParts()
			c.set(p.claims)
			_, err := v.Verify(ctx, testRequest(p.encode(t)))
			wantRefused(t, err, CodeInvalidProof, c.check)
		})
	}
}

// RFC 9449 §4.3 step 4: "the typ JOSE Header Parameter has the value
// dpop+jwt".
func TestVerify_RFC9449_4_3_4_Typ(t *testing.T) {
	v := newTestVerifier(t, Options{})
	for _, typ := range []any{nil, "JWT", "at+jwt", "DPoP+JWT", "application/dpop+jwt", 1} {
		p := defaultParts()
		if typ == nil {
			delete(p.header, "typ")
		} else {
			p.header["typ"] = typ
		}
		_, err := v.Verify(ctx, testRequest(p.encode(t)))
		wantRefused(t, err, CodeInvalidProof, CheckTyp)
	}
}

// RFC 9449 §4.3 step 5: "the alg JOSE Header Parameter indicates a
// registered asymmetric digital signature algorithm, is not none, is
// supported by the application, and is acceptable per local policy".
func TestVerify_RFC9449_4_3_5_Alg(t *testing.T) {
	k := key("P-256")
	jwk, _ := canonicalJWK(k.Public())
	hs := func() string { // HS256 "signed" with the public JWK as secret
		enc := base64.RawURLEncoding.EncodeToString
		h, _ := json.Marshal(map[string]any{"typ": "dpop+jwt", "alg": "HS256", "jwk": json.RawMessage(jwk)})
		input := enc(h) + "." + enc([]byte(`{"jti":"a","htm":"GET","htu":"`+testURL+`","iat":1800000000}`))
		m := hmac.New(sha256.New, jwk)
		m.Write([]byte(input))
		return input + "." + enc(m.Sum(nil))
	}
	none := defaultParts()
	none.header["alg"] = "none"
	missing := defaultParts()
	delete(missing.header, "alg")
	unknown := defaultParts()
	unknown.header["alg"] = "ES256K"
	only384 := newTestVerifier(t, Options{Algorithms: []string{"ES384"}})
	all := newTestVerifier(t, Options{})
	for name, c := range map[string]struct {
		v     *Verifier
		proof string
	}{
		"none":        {all, none.encode(t)},
		"HS256":       {all, hs()},
		"missing":     {all, missing.encode(t)},
		"unknown":     {all, unknown.encode(t)},
		"not allowed": {only384, defaultParts().encode(t)},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.v.Verify(ctx, testRequest(c.proof))
			wantRefused(t, err, CodeInvalidProof, CheckAlg)
		})
	}
}

// NewVerifier refuses none, HMAC and unknown algorithms (§4.3 step 5).
func TestNewVerifier_RFC9449_4_3_5_AsymmetricOnly(t *testing.T) {
	for _, alg := range []string{"none", "HS256", "HS512", "ES256K", "RSA-OAEP"} {
		if _, err := NewVerifier(Options{Algorithms: []string{"ES256", alg}}); err == nil {
			t.Errorf("NewVerifier accepted %s", alg)
		}
	}
	if _, err := NewVerifier(Options{Nonce: true, NonceSecret: make([]byte, 31)}); err == nil {
		t.Error("NewVerifier accepted a 31-byte nonce secret")
	}
	v, err := NewVerifier(Options{})
	if err != nil || strings.Join(v.Algorithms(), " ") != strings.Join(DefaultAlgorithms, " ") {
		t.Fatalf("Algorithms() = %v, %v", v.Algorithms(), err)
	}
}

// RFC 9449 §4.3 step 6: "the JWT signature verifies with the public key
// contained in the jwk JOSE Header Parameter".
func TestVerify_RFC9449_4_3_6_Signature(t *testing.T) {
	for _, warm := range []bool{false, true} {
		t.Run(map[bool]string{false: "new header", true: "known header"}[warm], func(t *testing.T) {
			testSignature(t, warm)
		})
	}
}

// testSignature refuses bad signatures; warm: after a valid proof with
// the same header (and key) was verified and its header cached.
func testSignature(t *testing.T, warm bool) {
	v := newTestVerifier(t, Options{})
	good := defaultParts().encode(t)
	if warm {
		for _, c := range []struct{ key, alg string }{{"P-256", "ES256"}, {"RSA", "RS256"}, {"RSA", "PS256"}, {"Ed25519", "EdDSA"}} {
			p := defaultParts().withKey(c.key, c.alg)
			p.claims["jti"] = "warm-up " + c.alg
			if _, err := v.Verify(ctx, testRequest(p.encode(t))); err != nil {
				t.Fatal(err)
			}
		}
	}
	parts := strings.Split(good, ".")
	tampered := defaultParts()
	tampered.claims["jti"] = "jti-2"
	tparts := strings.Split(tampered.encode(t), ".")
	otherKey := defaultParts()
	otherKey.key = key("other P-256") // signs with another key than jwk's
	enc := base64.RawURLEncoding.EncodeToString
	for name, proof := range map[string]string{
		"tampered payload": parts[0] + "." + tparts[1] + "." + parts[2],
		"other key":        otherKey.encode(t),
		"zero signature":   parts[0] + "." + parts[1] + "." + enc(make([]byte, 64)),
		"r = n":            parts[0] + "." + parts[1] + "." + enc(append(ecdsa256N(), make([]byte, 32)...)),
		"short signature":  parts[0] + "." + parts[1] + "." + enc(make([]byte, 63)),
		"ASN.1 signature":  parts[0] + "." + parts[1] + "." + asn1Sig(t, parts[2]),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := v.Verify(ctx, testRequest(proof))
			wantRefused(t, err, CodeInvalidProof, CheckSignature)
		})
	}
	for _, c := range []struct{ key, alg string }{{"RSA", "RS256"}, {"RSA", "PS256"}, {"Ed25519", "EdDSA"}} {
		t.Run("tampered "+c.alg, func(t *testing.T) {
			p := strings.Split(defaultParts().withKey(c.key, c.alg).encode(t), ".")
			_, err := v.Verify(ctx, testRequest(p[0]+"."+tparts[1]+"."+p[2]))
			wantRefused(t, err, CodeInvalidProof, CheckSignature)
		})
	}
}

func ecdsa256N() []byte {
	return key("P-256").Public().(*ecdsa.PublicKey).Curve.Params().N.FillBytes(make([]byte, 32))
}

// asn1Sig re-encodes a JWS ES256 signature as ASN.1 DER, the form RFC
// 7518 §3.4 does not allow.
func asn1Sig(t *testing.T, s string) string {
	raw, _ := base64.RawURLEncoding.DecodeString(s)
	der, ok := ecdsaDER(nil, raw[:32], raw[32:])
	if !ok {
		t.Fatal("ecdsaDER")
	}
	return base64.RawURLEncoding.EncodeToString(der)
}

// RFC 9449 §4.3 step 8: "the htm claim matches the HTTP method of the
// current request" (methods are case-sensitive, RFC 9110 §9.1).
func TestVerify_RFC9449_4_3_8_HTM(t *testing.T) {
	v := newTestVerifier(t, Options{})
	for _, method := range []string{"POST", "get", "HEAD"} {
		r := testRequest(defaultParts().encode(t))
		r.Method = method
		_, err := v.Verify(ctx, r)
		wantRefused(t, err, CodeInvalidProof, CheckHTM)
	}
}

// RFC 9449 §4.3 step 9: "the htu claim matches the HTTP URI value for the
// HTTP request in which the JWT was received, ignoring any query and
// fragment parts", compared after RFC 3986 §6 normalisation (§4.3 note).
func TestVerify_RFC9449_4_3_9_HTU(t *testing.T) {
	for _, c := range []struct {
		htu, url string
		ok       bool
	}{
		{testURL, testURL, true},
		{testURL, testURL + "?page=2#top", true},
		{testURL + "?page=1", testURL + "?page=2", true},
		{"HTTPS://API.Example.COM:443/orders", testURL, true},
		{"https://api.example.com/a/../orders", testURL, true},
		{"https://api.example.com/%6Frders", testURL, true},
		{testURL, "https://api.example.com/orders/", false},
		{testURL, "http://api.example.com/orders", false},
		{testURL, "https://api.example.com:8443/orders", false},
		{testURL, "https://api2.example.com/orders", false},
		{testURL, "https://api.example.com/Orders", false},
		{"https://api.example.com/orders%2F", "https://api.example.com/orders/", false},
		{"/orders", testURL, false},
		{"https://api.example.com/or ders", "https://api.example.com/or%20ders", false},
	} {
		v := newTestVerifier(t, Options{})
		p := defaultParts()
		p.claims["htu"] = c.htu
		r := testRequest(p.encode(t))
		r.URL = c.url
		_, err := v.Verify(ctx, r)
		if c.ok && err != nil {
			t.Errorf("htu %q, URL %q: %v", c.htu, c.url, err)
		}
		if !c.ok {
			var e *Error
			if !errors.As(err, &e) || e.Check != CheckHTU {
				t.Errorf("htu %q, URL %q: err = %v, want an htu refusal", c.htu, c.url, err)
			}
		}
	}
}

// RFC 9449 §4.3 step 10 and §9: with server nonces on, a proof without a
// current nonce is refused with use_dpop_nonce, and Nonce hands out one
// that replicas sharing the secret accept.
func TestVerify_RFC9449_4_3_10_Nonce(t *testing.T) {
	secret := []byte(strings.Repeat("s", 32))
	now := testNow
	clock := func() time.Time { return now }
	a := newTestVerifier(t, Options{Nonce: true, NonceSecret: secret, Now: clock})
	b := newTestVerifier(t, Options{Nonce: true, NonceSecret: secret, Now: clock})
	other := newTestVerifier(t, Options{Nonce: true, NonceSecret: []byte(strings.Repeat("o", 32)), Now: clock})
	jti := 0
	verify := func(v *Verifier, nonce any) error {
		jti++
		p := defaultParts()
		p.claims["jti"] = strings.Repeat("x", jti)
		p.claims["iat"] = now.Unix()
		if nonce != nil {
			p.claims["nonce"] = nonce
		}
		_, err := v.Verify(ctx, testRequest(p.encode(t)))
		return err
	}
	if e := new(Error); !errors.As(verify(a, nil), &e) || e.Code != CodeUseNonce || e.Reason != "nonce missing" {
		t.Fatalf("without a nonce: %v", e)
	}
	wantRefused(t, verify(a, "made-up"), CodeUseNonce, CheckNonce)
	if !errors.Is(verify(a, nil), ErrUseNonce) {
		t.Fatal("a missing nonce does not match ErrUseNonce")
	}
	n := a.Nonce()
	if err := verify(a, n); err != nil {
		t.Fatalf("a's own nonce: %v", err)
	}
	if err := verify(b, n); err != nil {
		t.Fatalf("a's nonce at replica b: %v", err)
	}
	wantRefused(t, verify(other, n), CodeUseNonce, CheckNonce)
	// Half a lifetime on, a new nonce is handed out and the old one still
	// accepted; a lifetime after the old one's period began, it is stale.
	now = now.Add(DefaultNonceLifetime / 2)
	if a.Nonce() == n {
		t.Fatal("the nonce did not rotate after half its lifetime")
	}
	if err := verify(b, n); err != nil {
		t.Fatalf("a nonce half a lifetime old: %v", err)
	}
	now = now.Add(DefaultNonceLifetime / 2)
	wantRefused(t, verify(a, n), CodeUseNonce, CheckNonce)
	// A replica whose clock runs ahead hands out the next period's nonce:
	// accepted within the leeway of that period's start, not before.
	period := DefaultNonceLifetime / 2
	start := time.Unix(0, now.UnixNano()/int64(period)*int64(period))
	ahead := newTestVerifier(t, Options{Nonce: true, NonceSecret: secret, Now: func() time.Time { return start.Add(period) }})
	next := ahead.Nonce()
	now = start.Add(period - DefaultLeeway)
	if err := verify(a, next); err != nil {
		t.Fatalf("the next period's nonce within the leeway: %v", err)
	}
	now = start.Add(period - DefaultLeeway - time.Second)
	wantRefused(t, verify(a, next), CodeUseNonce, CheckNonce)
	// Without Options.Nonce a nonce is not required (nor checked).
	if err := verify(newTestVerifier(t, Options{Now: clock}), nil); err != nil {
		t.Fatal(err)
	}
}

// RFC 9449 §4.3 step 11: "the creation time of the JWT, as determined by
// ... the iat claim ..., is within an acceptable window (see Section
// 11.1)": MaxAge in the past, Leeway in the future.
func TestVerify_RFC9449_4_3_11_IAT(t *testing.T) {
	v := newTestVerifier(t, Options{MaxAge: 30 * time.Second, Leeway: 2 * time.Second})
	for _, c := range []struct {
		iat any
		ok  bool
	}{
		{testNow.Unix(), true},
		{testNow.Add(-30 * time.Second).Unix(), true},
		{testNow.Add(2 * time.Second).Unix(), true},
		{float64(testNow.Unix()) + 0.5, true},
		{testNow.Add(-31 * time.Second).Unix(), false},
		{testNow.Add(3 * time.Second).Unix(), false},
		{0, false},
		{-1e300, false},
		{1e300, false},
	} {
		p := defaultParts()
		p.claims["iat"] = c.iat
		p.claims["jti"] = fmt.Sprint("jti ", c.iat)
		_, err := v.Verify(ctx, testRequest(p.encode(t)))
		if c.ok && err != nil {
			t.Errorf("iat %v: %v", c.iat, err)
		}
		if !c.ok {
			var e *Error
			if !errors.As(err, &e) || e.Check != CheckIAT {
				t.Errorf("iat %v: err = %v, want an iat refusal", c.iat, err)
			}
		}
	}
}

// RFC 9449 §11.1 (and §4.3 step 11): a proof (its jti, for its key) is
// accepted once within the window; the replay cache keeps it until
// iat+MaxAge+Leeway, and is touched only by proofs whose signature
// verified.
func TestVerify_RFC9449_11_1_Replay(t *testing.T) {
	rc := &countingReplay{}
	v := newTestVerifier(t, Options{Replay: rc})
	proof := defaultParts().encode(t)
	if _, err := v.Verify(ctx, testRequest(proof)); err != nil {
		t.Fatal(err)
	}
	if want := testNow.Add(DefaultMaxAge + DefaultLeeway); !rc.until.Equal(want) {
		t.Fatalf("claimed until %v, want %v", rc.until, want)
	}
	_, err := v.Verify(ctx, testRequest(proof))
	wantRefused(t, err, CodeInvalidProof, CheckReplay)
	if !errors.Is(err, ErrReplay) || !errors.Is(err, ErrInvalidProof) {
		t.Fatalf("a replay does not match ErrReplay and ErrInvalidProof: %v", err)
	}
	// The same jti by another key is another proof.
	if _, err := v.Verify(ctx, testRequest(defaultParts().withKey("Ed25519", "EdDSA").encode(t))); err != nil {
		t.Fatal(err)
	}
	// The default in-memory cache refuses a replay too.
	mem := newTestVerifier(t, Options{})
	if _, err := mem.Verify(ctx, testRequest(proof)); err != nil {
		t.Fatal(err)
	}
	_, err = mem.Verify(ctx, testRequest(proof))
	wantRefused(t, err, CodeInvalidProof, CheckReplay)
}

// Invalid proofs never reach the replay cache: a flood of forged proofs
// cannot fill it (nor cost a round trip to a shared one).
func TestVerify_InvalidProofsDoNotTouchReplayCache(t *testing.T) {
	rc := &countingReplay{}
	v := newTestVerifier(t, Options{Replay: rc})
	parts := strings.Split(defaultParts().encode(t), ".")
	tampered := defaultParts()
	tampered.claims["jti"] = "other"
	tp := strings.Split(tampered.encode(t), ".")
	for _, proof := range []string{parts[0] + "." + tp[1] + "." + parts[2], "a.b.c", parts[0] + "." + parts[1]} {
		if _, err := v.Verify(ctx, testRequest(proof)); err == nil {
			t.Fatal("an invalid proof verified")
		}
	}
	r := testRequest(defaultParts().encode(t))
	r.JKT = "not-the-key"
	_, err := v.Verify(ctx, r)
	wantRefused(t, err, CodeInvalidProof, CheckJKT)
	if rc.calls != 0 {
		t.Fatalf("the replay cache was consulted %d times for invalid proofs", rc.calls)
	}
}

// A replay cache that fails makes Verify fail with ErrUnavailable, not
// with a refusal of the proof (a 503, not a 401).
func TestVerify_ReplayCacheUnavailable(t *testing.T) {
	down := errors.New("connection refused")
	v := newTestVerifier(t, Options{Replay: &countingReplay{err: down}})
	_, err := v.Verify(ctx, testRequest(defaultParts().encode(t)))
	var e *Error
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, down) || errors.As(err, &e) {
		t.Fatalf("err = %v, want ErrUnavailable wrapping the cause, not an *Error", err)
	}
}

// RFC 9449 §4.3 step 12: "if presented to a protected resource in
// conjunction with an access token, ensure that the value of the ath
// claim equals the hash of that access token".
func TestVerify_RFC9449_4_3_12_ATH(t *testing.T) {
	v := newTestVerifier(t, Options{})
	missing := defaultParts()
	delete(missing.claims, "ath")
	wrong := defaultParts()
	wrong.claims["ath"] = AccessTokenHash("another token")
	for reason, proof := range map[string]string{
		"ath missing": missing.encode(t), "ath is not the hash of the access token": wrong.encode(t),
	} {
		_, err := v.Verify(ctx, testRequest(proof))
		if e := new(Error); !errors.As(err, &e) || e.Check != CheckATH || e.Reason != reason {
			t.Errorf("err = %v, want the ath refusal %q", err, reason)
		}
	}
	// To a token endpoint (no access token) ath is not required.
	r := testRequest(missing.encode(t))
	r.AccessToken = ""
	if _, err := v.Verify(ctx, r); err != nil {
		t.Fatal(err)
	}
}

// RFC 9449 §4.3 step 12 (last clause) and §6.1: the key is the one the
// token is bound to (cnf.jkt), checked by Verify when Request.JKT is set.
func TestVerify_RFC9449_4_3_12_JKT(t *testing.T) {
	v := newTestVerifier(t, Options{})
	jkt, _ := ThumbprintOfKey(key("P-256").Public())
	other, _ := ThumbprintOfKey(key("other P-256").Public())
	r := testRequest(defaultParts().encode(t))
	r.JKT = other
	_, err := v.Verify(ctx, r)
	wantRefused(t, err, CodeInvalidProof, CheckJKT)
	r.JKT = jkt
	if _, err := v.Verify(ctx, r); err != nil {
		t.Fatal(err)
	}
}

// NewProof refuses an alg that does not fit the key.
func TestNewProof_AlgFitsKey(t *testing.T) {
	if _, err := NewProof(key("P-256"), ProofParams{Method: "GET", URL: testURL, Alg: "RS256"}); err == nil {
		t.Fatal("NewProof signed RS256 with an EC key")
	}
	if _, err := NewProof(key("P-256"), ProofParams{URL: testURL}); err == nil {
		t.Fatal("NewProof made a proof without a method")
	}
	proof, err := NewProof(key("P-384"), ProofParams{Method: "GET", URL: testURL + "?q#f", IssuedAt: testNow})
	if err != nil {
		t.Fatal(err)
	}
	r := testRequest(proof)
	r.AccessToken = ""
	p, err := newTestVerifier(t, Options{}).Verify(ctx, r)
	if err != nil || p.Alg != "ES384" || len(p.JTI) != 22 {
		t.Fatalf("Proof = %+v, %v", p, err)
	}
}
