package idp_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/dpop"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// The rules of sender-constrained tokens in the library (binding.go):
// a token bound to a key (cnf) is accepted only with its proof, in every
// DPoP mode; the DPoP scheme is read where Bearer is; Required refuses
// bearer tokens.

const target = "http://example.com/x" // httptest.NewRequest's URL for "/x"

func boundClaims(srv *idptest.Server) map[string]any {
	c := srv.UserClaims(clientID, "alice", "creator")
	c["aud"] = clientID
	return c
}

func dpopPlugin(t *testing.T, srv *idptest.Server, mode dpop.Mode, mutate func(*idp.Config)) *idp.Plugin {
	return newPlugin(t, srv, func(c *idp.Config) {
		c.DPoP.Mode = mode
		if mutate != nil {
			mutate(c)
		}
	})
}

// serve runs the Middleware on one request and returns the answer and
// whether the handler ran.
func serve(t *testing.T, p *idp.Plugin, r *http.Request) (*httptest.ResponseRecorder, bool) {
	t.Helper()
	ran := false
	rec := httptest.NewRecorder()
	p.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ran = true })).ServeHTTP(rec, r)
	return rec, ran
}

func dpopRequest(scheme, tok string, proofs ...string) *http.Request {
	r := httptest.NewRequest("GET", "/x", nil)
	r.Header.Set("Authorization", scheme+" "+tok)
	for _, p := range proofs {
		r.Header.Add("DPoP", p)
	}
	return r
}

func challenges(rec *httptest.ResponseRecorder) string {
	return strings.Join(rec.Header().Values("WWW-Authenticate"), " | ")
}

// RFC 9449 §7.1 and §4.3 step 12: a DPoP-bound token under the DPoP
// scheme with a valid proof by its key passes, in Allowed and Required;
// the Keycloak shape (typ "DPoP") too.
func TestDPoPBoundTokenWithProof_RFC9449_7_1(t *testing.T) {
	srv := idptest.NewServer(t)
	key := idptest.NewDPoPKey()
	for _, mode := range []dpop.Mode{dpop.Allowed, dpop.Required} {
		p := dpopPlugin(t, srv, mode, nil)
		for _, keycloak := range []bool{false, true} {
			tok := srv.MintDPoP(boundClaims(srv), key, keycloak)
			for i := range 2 { // the second time from the verified-token cache
				rec, ran := serve(t, p, dpopRequest("DPoP", tok, key.Proof("GET", target, tok)))
				if !ran {
					t.Fatalf("%v keycloak=%v #%d: %d %s %q", mode, keycloak, i, rec.Code, rec.Body, challenges(rec))
				}
			}
		}
	}
}

// RFC 9449 §4.3 step 11 (jti): a proof is used once, also when the token
// is served by the verified-token cache.
func TestDPoPProofReplayRefused_RFC9449_4_3_step11(t *testing.T) {
	srv := idptest.NewServer(t)
	key := idptest.NewDPoPKey()
	p := dpopPlugin(t, srv, dpop.Allowed, nil)
	tok := srv.MintDPoP(boundClaims(srv), key, false)
	proof := key.Proof("GET", target, tok)
	if _, ran := serve(t, p, dpopRequest("DPoP", tok, proof)); !ran {
		t.Fatal("first use refused")
	}
	rec, ran := serve(t, p, dpopRequest("DPoP", tok, proof))
	if ran || rec.Code != http.StatusUnauthorized || !strings.Contains(challenges(rec), `DPoP error="invalid_dpop_proof"`) {
		t.Fatalf("replay: %d %q", rec.Code, challenges(rec))
	}
}

// RFC 9449 §4.3 step 12: the proof's key must be the token's (cnf.jkt).
func TestDPoPProofByOtherKey_RFC9449_4_3_step12(t *testing.T) {
	srv := idptest.NewServer(t)
	key, other := idptest.NewDPoPKey(), idptest.NewDPoPKey()
	p := dpopPlugin(t, srv, dpop.Allowed, nil)
	tok := srv.MintDPoP(boundClaims(srv), key, false)
	r := dpopRequest("DPoP", tok, other.Proof("GET", target, tok))
	v := p.Authorize(r)
	if v.Outcome != idp.InvalidToken || idp.PossessionCheck(v.Err) != dpop.CheckJKT || !errors.Is(v.Err, idp.ErrSenderConstrained) {
		t.Fatalf("Authorize = %v %v (check %q)", v.Outcome, v.Err, idp.PossessionCheck(v.Err))
	}
}

// RFC 9449 §7.2 (a bound token is never a bearer token) and the modes:
// each presentation with the answer it gets, in every mode.
func TestDPoPModes_RFC9449_7_2(t *testing.T) {
	srv := idptest.NewServer(t)
	key := idptest.NewDPoPKey()
	bound := srv.MintDPoP(boundClaims(srv), key, false)
	keycloak := srv.MintDPoP(boundClaims(srv), key, true)
	bearer := srv.Mint(boundClaims(srv))
	c := boundClaims(srv)
	c["typ"] = "DPoP"
	typOnly := srv.Mint(c)
	c = boundClaims(srv)
	c["cnf"] = map[string]any{"jwk": map[string]any{"kty": "EC"}}
	jwkBound := srv.Mint(c)
	c = boundClaims(srv)
	c["cnf"] = map[string]any{"jkt": key.JKT, "x5t#S256": key.JKT}
	twoBound := srv.Mint(c)
	for _, tc := range []struct {
		name  string
		mode  dpop.Mode
		req   func() *http.Request
		check string // "" allowed; else the PossessionCheck, or "-" for another refusal
	}{
		{"off: bearer passes", dpop.Off, func() *http.Request { return dpopRequest("Bearer", bearer) }, ""},
		{"off: the DPoP scheme is refused", dpop.Off, func() *http.Request {
			return dpopRequest("DPoP", bound, key.Proof("GET", target, bound))
		}, "scheme"},
		{"off: a DPoP-bound token under Bearer is refused", dpop.Off, func() *http.Request { return dpopRequest("Bearer", bound) }, "scheme"},
		{"off: Keycloak's DPoP token under Bearer is refused", dpop.Off, func() *http.Request { return dpopRequest("Bearer", keycloak) }, "scheme"},
		{"off: typ DPoP without cnf is refused", dpop.Off, func() *http.Request { return dpopRequest("Bearer", typOnly) }, "cnf"},
		{"off: cnf.jwk is refused", dpop.Off, func() *http.Request { return dpopRequest("Bearer", jwkBound) }, "cnf"},
		{"off: a cnf of two members is refused", dpop.Off, func() *http.Request { return dpopRequest("Bearer", twoBound) }, "cnf"},
		{"allowed: bearer passes", dpop.Allowed, func() *http.Request { return dpopRequest("Bearer", bearer) }, ""},
		{"allowed: a DPoP-bound token under Bearer is refused", dpop.Allowed, func() *http.Request { return dpopRequest("Bearer", bound) }, "scheme"},
		{"allowed: a DPoP-bound token without proof", dpop.Allowed, func() *http.Request { return dpopRequest("DPoP", bound) }, dpop.CheckCount},
		{"allowed: two proofs (RFC 9449 §4.3 step 1)", dpop.Allowed, func() *http.Request {
			return dpopRequest("DPoP", bound, key.Proof("GET", target, bound), key.Proof("GET", target, bound))
		}, dpop.CheckCount},
		{"allowed: an unbound token under DPoP", dpop.Allowed, func() *http.Request {
			return dpopRequest("DPoP", bearer, key.Proof("GET", target, bearer))
		}, "cnf"},
		{"allowed: htm mismatch (RFC 9449 §4.3 step 8)", dpop.Allowed, func() *http.Request {
			return dpopRequest("DPoP", bound, key.Proof("POST", target, bound))
		}, dpop.CheckHTM},
		{"allowed: htu mismatch (RFC 9449 §4.3 step 9)", dpop.Allowed, func() *http.Request {
			return dpopRequest("DPoP", bound, key.Proof("GET", "https://example.com/x", bound))
		}, dpop.CheckHTU},
		{"allowed: ath of another token (RFC 9449 §4.3 step 12)", dpop.Allowed, func() *http.Request {
			return dpopRequest("DPoP", bound, key.Proof("GET", target, bearer))
		}, dpop.CheckATH},
		{"allowed: iat too old (RFC 9449 §4.3 step 11)", dpop.Allowed, func() *http.Request {
			return dpopRequest("DPoP", bound, key.ProofWith(dpop.ProofParams{Method: "GET", URL: target, AccessToken: bound, IssuedAt: time.Now().Add(-time.Hour)}))
		}, dpop.CheckIAT},
		{"required: bearer is refused", dpop.Required, func() *http.Request { return dpopRequest("Bearer", bearer) }, "scheme"},
		{"required: a DPoP-bound token with its proof passes", dpop.Required, func() *http.Request {
			return dpopRequest("DPoP", bound, key.Proof("GET", target, bound))
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := dpopPlugin(t, srv, tc.mode, nil)
			v := p.Authorize(tc.req())
			if tc.check == "" {
				if !v.Allowed() {
					t.Fatalf("refused: %v", v.Err)
				}
				return
			}
			if v.Outcome != idp.InvalidToken || idp.PossessionCheck(v.Err) != tc.check {
				t.Fatalf("Authorize = %v %v (check %q), want invalid_token by %q", v.Outcome, v.Err, idp.PossessionCheck(v.Err), tc.check)
			}
			rec, ran := serve(t, p, tc.req())
			ch := challenges(rec)
			if ran || rec.Code != http.StatusUnauthorized {
				t.Fatalf("Middleware: %d %q", rec.Code, ch)
			}
			// RFC 9449 §7.1: the challenges name the schemes accepted.
			switch tc.mode {
			case dpop.Off:
				if strings.Contains(ch, "| DPoP ") || !strings.HasPrefix(ch, `Bearer realm=`) {
					t.Fatalf("off: challenges %q", ch)
				}
			case dpop.Allowed:
				if !strings.Contains(ch, `Bearer realm=`) || !strings.Contains(ch, `DPoP `) || !strings.Contains(ch, `algs="ES256`) {
					t.Fatalf("allowed: challenges %q", ch)
				}
			case dpop.Required:
				if strings.Contains(ch, "Bearer") || !strings.Contains(ch, `DPoP error=`) {
					t.Fatalf("required: challenges %q", ch)
				}
			}
		})
	}
}

// Verify (no request, no proof) refuses every bound token, and the
// no-token answer of Required names DPoP only.
func TestVerifyRefusesBoundTokens_RFC9449_7_2(t *testing.T) {
	srv := idptest.NewServer(t)
	key := idptest.NewDPoPKey()
	p := dpopPlugin(t, srv, dpop.Allowed, nil)
	for range 2 {
		if _, err := p.Verify(t.Context(), srv.MintDPoP(boundClaims(srv), key, true)); !errors.Is(err, idp.ErrSenderConstrained) || !errors.Is(err, idp.ErrInvalidToken) {
			t.Fatalf("Verify = %v", err)
		}
	}
	if _, err := p.Verify(t.Context(), srv.Mint(boundClaims(srv))); err != nil {
		t.Fatalf("bearer: %v", err)
	}
	req := dpopPlugin(t, srv, dpop.Required, nil)
	rec, _ := serve(t, req, httptest.NewRequest("GET", "/x", nil))
	if ch := challenges(rec); rec.Code != 401 || ch != `DPoP algs="`+strings.Join(dpop.DefaultAlgorithms, " ")+`"` {
		t.Fatalf("required, no token: %d %q", rec.Code, ch)
	}
	// VerifyPresentation, the explicit entry, checks the proof it is given.
	tok := srv.MintDPoP(boundClaims(srv), key, false)
	pres := idp.Presentation{Token: tok, DPoP: true, Mode: dpop.Allowed, Method: "GET", URL: "https://api.example/x?q=1",
		Proofs: []string{key.Proof("GET", "https://api.example/x", tok)}}
	if _, err := p.VerifyPresentation(t.Context(), pres); err != nil {
		t.Fatalf("VerifyPresentation: %v", err)
	}
	if _, err := p.VerifyPresentation(t.Context(), pres); idp.PossessionCheck(err) != dpop.CheckReplay {
		t.Fatalf("VerifyPresentation replayed: %v", err)
	}
}

// RFC 9449 §9: with nonces on, a proof without one is answered 401
// use_dpop_nonce with DPoP-Nonce; a proof with it passes. Two plugins
// sharing the session secret accept each other's nonces.
func TestDPoPNonce_RFC9449_9(t *testing.T) {
	srv := idptest.NewServer(t)
	key := idptest.NewDPoPKey()
	secret := []byte("0123456789abcdef0123456789abcdef")
	mk := func() *idp.Plugin {
		return dpopPlugin(t, srv, dpop.Allowed, func(c *idp.Config) { c.DPoP.Nonce = true; c.SessionSecret = secret })
	}
	a, b := mk(), mk()
	tok := srv.MintDPoP(boundClaims(srv), key, false)
	rec, ran := serve(t, a, dpopRequest("DPoP", tok, key.Proof("GET", target, tok)))
	nonce := rec.Header().Get("DPoP-Nonce")
	if ran || rec.Code != 401 || nonce == "" || !strings.Contains(challenges(rec), `DPoP error="use_dpop_nonce"`) {
		t.Fatalf("without nonce: %d %q nonce %q", rec.Code, challenges(rec), nonce)
	}
	proof := key.ProofWith(dpop.ProofParams{Method: "GET", URL: target, AccessToken: tok, Nonce: nonce})
	if rec, ran := serve(t, b, dpopRequest("DPoP", tok, proof)); !ran {
		t.Fatalf("other replica: %d %q", rec.Code, challenges(rec))
	}
}

// RFC 8705 §3: a certificate-bound token passes only with the client
// certificate it is bound to, from the TLS connection or from the context
// (an ingress passed it), in every mode but Required.
func TestCertificateBoundToken_RFC8705_3(t *testing.T) {
	srv := idptest.NewServer(t)
	cert, other := selfSigned(t), selfSigned(t)
	tok := srv.MintCertBound(boundClaims(srv), cert)
	p := dpopPlugin(t, srv, dpop.Off, nil)
	withTLS := func(c *x509.Certificate) *http.Request {
		r := dpopRequest("Bearer", tok)
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}}
		return r
	}
	if v := p.Authorize(withTLS(cert)); !v.Allowed() {
		t.Fatalf("matching certificate: %v", v.Err)
	}
	r := dpopRequest("Bearer", tok)
	if v := p.Authorize(r.WithContext(idp.WithClientCertificate(r.Context(), cert))); !v.Allowed() {
		t.Fatalf("certificate from the context: %v", v.Err)
	}
	for name, r := range map[string]*http.Request{"other certificate": withTLS(other), "no certificate": dpopRequest("Bearer", tok)} {
		if v := p.Authorize(r); v.Outcome != idp.InvalidToken || idp.PossessionCheck(v.Err) != "x5t#S256" {
			t.Fatalf("%s: %v %v", name, v.Outcome, v.Err)
		}
	}
	if v := dpopPlugin(t, srv, dpop.Required, nil).Authorize(withTLS(cert)); v.Outcome != idp.InvalidToken {
		t.Fatalf("required: %v", v.Outcome)
	}
}

func selfSigned(t *testing.T) *x509.Certificate {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// failingReplay is a replay cache that is down.
type failingReplay struct{}

func (failingReplay) Claim(context.Context, string, time.Time) (bool, error) {
	return false, errors.New("connection refused")
}
func (failingReplay) Name() string { return "Redis" }

// An outage of the replay cache is a 503 naming it (never a 401: the
// proof could not be checked), with Retry-After.
func TestDPoPReplayCacheOutage(t *testing.T) {
	srv := idptest.NewServer(t)
	key := idptest.NewDPoPKey()
	p := dpopPlugin(t, srv, dpop.Allowed, func(c *idp.Config) { c.DPoP.Replay = failingReplay{} })
	tok := srv.MintDPoP(boundClaims(srv), key, false)
	rec, ran := serve(t, p, dpopRequest("DPoP", tok, key.Proof("GET", target, tok)))
	if ran || rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" ||
		!strings.Contains(rec.Body.String(), "DPoP replay cache (Redis) is unavailable") {
		t.Fatalf("%d %q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
}

// RFC 9449 §4.3 step 9: htu is the URL the client used: https from the
// TLS connection, or from X-Forwarded-Proto only when it is trusted.
func TestDPoPHTUScheme_RFC9449_4_3_step9(t *testing.T) {
	srv := idptest.NewServer(t)
	key := idptest.NewDPoPKey()
	tok := srv.MintDPoP(boundClaims(srv), key, false)
	const https = "https://example.com/x"
	for _, tc := range []struct {
		name    string
		trust   bool
		tls     bool
		fwd     string
		allowed bool
	}{
		{"TLS", false, true, "", true},
		{"plain HTTP", false, false, "", false},
		{"X-Forwarded-Proto untrusted", false, false, "https", false},
		{"X-Forwarded-Proto trusted", true, false, "https", true},
	} {
		p := dpopPlugin(t, srv, dpop.Allowed, func(c *idp.Config) { c.DPoP.TrustForwarded = tc.trust })
		r := dpopRequest("DPoP", tok, key.Proof("GET", https, tok))
		if tc.tls {
			r.TLS = &tls.ConnectionState{}
		}
		if tc.fwd != "" {
			r.Header.Set("X-Forwarded-Proto", tc.fwd)
		}
		if v := p.Authorize(r); v.Allowed() != tc.allowed {
			t.Errorf("%s: allowed=%v (%v), want %v", tc.name, v.Allowed(), v.Err, tc.allowed)
		}
	}
}
