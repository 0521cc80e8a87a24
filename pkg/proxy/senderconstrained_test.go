package proxy

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/idp-proxy/idp-proxy/internal/testneed"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/dpop"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
	"github.com/idp-proxy/idp-proxy/pkg/idp/redisstore"
)

// DPoP (RFC 9449) and certificate-bound tokens (RFC 8705) through the real
// proxy: every check of RFC 9449 §4.3 refused with its own answer, the
// modes per rule, forward-auth, the headers upstream, and replay and
// nonces across replicas.

// dpopRoutes add a rule per mode to the realistic ones (idp.dpop.mode
// stays off: the default rule and the others are off).
var dpopRoutes = append([]RouteConfig{
	{Match: "/dpop/required/", DPoP: "required"},
	{Match: "/dpop/allowed/", DPoP: "allowed"},
	{Match: "/dpop/off/", DPoP: "off"},
}, realisticRoutes...)

type dpopSetup struct {
	idp *idptest.Server
	up  *recordingUpstream
	p   *Proxy
	px  *httptest.Server
	key *idptest.DPoPKey
}

func newDPoPSetup(t *testing.T, mutate func(*testSetup)) *dpopSetup {
	s := &dpopSetup{idp: newProvider(t), up: newUpstream(t), key: idptest.NewDPoPKey()}
	cfg := testConfig(s.idp, s.up.URL)
	cfg.Routes = dpopRoutes
	cfg.ForwardAuth = ForwardAuthConfig{Enabled: true, TrustedCIDRs: []string{"10.1.0.0/16"}}
	if mutate != nil {
		mutate(&cfg)
	}
	s.p, s.px = startProxy(t, cfg, Options{}, true)
	return s
}

func (s *dpopSetup) bound(keycloak bool) string {
	return s.idp.MintDPoP(s.idp.UserClaims("shortener", "alice", "creator"), s.key, keycloak)
}

// send makes a request to the proxy with the Authorization scheme and
// token and the given DPoP header values.
func (s *dpopSetup) send(t *testing.T, method, path, scheme, tok string, proofs ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.px.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", scheme+" "+tok)
	}
	for _, p := range proofs {
		req.Header.Add("DPoP", p)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// craft signs a proof with any header and claims (ES256 by key), for the
// failures dpop.NewProof cannot make.
func craft(t *testing.T, key *ecdsa.PrivateKey, hdr, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	input := enc(hdr) + "." + enc(claims)
	sum := sha256.Sum256([]byte(input))
	r, sv, err := ecdsa.Sign(rand.Reader, key, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	sv.FillBytes(sig[32:])
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func publicJWK(k *ecdsa.PrivateKey) map[string]any {
	b, _ := k.PublicKey.Bytes() // 0x04 || X || Y
	return map[string]any{"kty": "EC", "crv": "P-256",
		"x": base64.RawURLEncoding.EncodeToString(b[1:33]), "y": base64.RawURLEncoding.EncodeToString(b[33:])}
}

// Every refusal of RFC 9449 §4.3 on a required route: 401 with the DPoP
// challenge naming invalid_dpop_proof (the check in the access log and
// the metrics), a problem+json body, and nothing upstream.
func TestDPoPProofChecksThroughProxy_RFC9449_4_3(t *testing.T) {
	s := newDPoPSetup(t, nil)
	tok := s.bound(false)
	other := idptest.NewDPoPKey()
	url := s.px.URL + "/dpop/required/x"
	claims := func(mod func(map[string]any)) map[string]any {
		c := map[string]any{"jti": "j-" + time.Now().Format("150405.000000000"), "htm": "GET", "htu": url,
			"iat": time.Now().Unix(), "ath": dpop.AccessTokenHash(tok)}
		if mod != nil {
			mod(c)
		}
		return c
	}
	hdr := func(mod func(map[string]any)) map[string]any {
		h := map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": publicJWK(s.key.Key)}
		if mod != nil {
			mod(h)
		}
		return h
	}
	good := func() string { return craft(t, s.key.Key, hdr(nil), claims(nil)) }
	replayed := good()
	if resp, body := s.send(t, "GET", "/dpop/required/x", "DPoP", tok, replayed); resp.StatusCode != 200 {
		t.Fatalf("a crafted valid proof: %d %s", resp.StatusCode, body)
	}
	badSig := good()
	badSig = badSig[:len(badSig)-4] + "AAAA"
	withD := publicJWK(s.key.Key)
	d, err := s.key.Key.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	withD["d"] = base64.RawURLEncoding.EncodeToString(d)
	for _, tc := range []struct {
		name   string
		proofs []string
		check  string
	}{
		{"step1_no_proof", nil, dpop.CheckCount},
		{"step1_two_proofs", []string{good(), good()}, dpop.CheckCount},
		{"step2_not_a_jwt", []string{"not.a.jwt"}, dpop.CheckSyntax},
		{"step4_typ_jwt", []string{craft(t, s.key.Key, hdr(func(h map[string]any) { h["typ"] = "JWT" }), claims(nil))}, dpop.CheckTyp},
		{"step5_alg_none", []string{craft(t, s.key.Key, hdr(func(h map[string]any) { h["alg"] = "none" }), claims(nil))}, dpop.CheckAlg},
		{"step5_alg_HS256", []string{craft(t, s.key.Key, hdr(func(h map[string]any) { h["alg"] = "HS256" }), claims(nil))}, dpop.CheckAlg},
		{"step6_bad_signature", []string{badSig}, dpop.CheckSignature},
		{"step7_private_jwk", []string{craft(t, s.key.Key, hdr(func(h map[string]any) { h["jwk"] = withD }), claims(nil))}, dpop.CheckPrivateKey},
		{"step3_no_jti", []string{craft(t, s.key.Key, hdr(nil), claims(func(c map[string]any) { delete(c, "jti") }))}, dpop.CheckJTI},
		{"step8_htm", []string{s.key.Proof("POST", url, tok)}, dpop.CheckHTM},
		{"step9_htu_path", []string{s.key.Proof("GET", s.px.URL+"/dpop/required/y", tok)}, dpop.CheckHTU},
		{"step9_htu_scheme", []string{s.key.Proof("GET", strings.Replace(url, "http:", "https:", 1), tok)}, dpop.CheckHTU},
		{"step11_iat_old", []string{s.key.ProofWith(dpop.ProofParams{Method: "GET", URL: url, AccessToken: tok, IssuedAt: time.Now().Add(-10 * time.Minute)})}, dpop.CheckIAT},
		{"step11_iat_future", []string{s.key.ProofWith(dpop.ProofParams{Method: "GET", URL: url, AccessToken: tok, IssuedAt: time.Now().Add(10 * time.Minute)})}, dpop.CheckIAT},
		{"step11_replay", []string{replayed}, dpop.CheckReplay},
		{"step12_ath_other_token", []string{s.key.Proof("GET", url, s.bound(true))}, dpop.CheckATH},
		{"step12_ath_missing", []string{s.key.Proof("GET", url, "")}, dpop.CheckATH},
		{"step12_cnf_jkt_other_key", []string{other.Proof("GET", url, tok)}, dpop.CheckJKT},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.up.count()
			resp, body := s.send(t, "GET", "/dpop/required/x", "DPoP", tok, tc.proofs...)
			ch := strings.Join(resp.Header.Values("WWW-Authenticate"), " | ")
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(ch, `DPoP error="invalid_dpop_proof"`) ||
				!strings.Contains(ch, `algs="`) || strings.Contains(ch, "Bearer") {
				t.Fatalf("%d %q %s", resp.StatusCode, ch, body)
			}
			if resp.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(body, "DPoP proof") {
				t.Fatalf("body %q %s", resp.Header.Get("Content-Type"), body)
			}
			if s.up.count() != before {
				t.Fatal("a refused request reached the upstream")
			}
			v := s.p.plugin.AuthorizeMode(reqFor(url, tok, tc.proofs), dpop.Required)
			if got := idp.PossessionCheck(v.Err); got != tc.check {
				t.Fatalf("check %q, want %q (%v)", got, tc.check, v.Err)
			}
			// The metrics name the check (never the proof).
			var m dto.Metric
			_ = s.p.metrics.dpopRefusals.WithLabelValues(tc.check).Write(&m)
			if n := m.GetCounter().GetValue(); n < 1 {
				t.Fatalf("idp_proxy_dpop_refusals_total{check=%q} = %v", tc.check, n)
			}
		})
	}
}

func reqFor(url, tok string, proofs []string) *http.Request {
	r := httptest.NewRequest("GET", url, nil)
	r.Header.Set("Authorization", "DPoP "+tok)
	r.Header["Dpop"] = proofs
	return r
}

// The modes per rule (RFC 9449 §7.1, §7.2): bearer tokens pass under
// allowed and off and are refused under required; a DPoP-bound token passes
// with its proof under allowed and required and is refused under off, as
// the DPoP scheme is; Keycloak's shape (typ DPoP) alike. Upstream, the
// proof travels with the token and the key's thumbprint is named; a
// client's DPoP and thumbprint headers never pass otherwise.
func TestDPoPModesThroughProxy_RFC9449_7(t *testing.T) {
	s := newDPoPSetup(t, nil)
	bearer := s.idp.Mint(s.idp.UserClaims("shortener", "alice", "creator"))
	for _, keycloak := range []bool{false, true} {
		tok := s.bound(keycloak)
		for _, path := range []string{"/dpop/required/x", "/dpop/allowed/x?q=1"} {
			proof := s.key.Proof("GET", s.px.URL+path, tok)
			resp, body := s.send(t, "GET", path, "DPoP", tok, proof)
			if resp.StatusCode != 200 {
				t.Fatalf("keycloak=%v %s: %d %s", keycloak, path, resp.StatusCode, body)
			}
			got := s.up.last(t).Header
			if got.Get("Authorization") != "DPoP "+tok || got.Get("Dpop") != proof || got.Get(DPoPJKTHeader) != s.key.JKT {
				t.Fatalf("upstream headers: %q %q %q", got.Get("Authorization"), got.Get("Dpop"), got.Get(DPoPJKTHeader))
			}
		}
		for _, path := range []string{"/dpop/off/x", "/admin/x"} { // routes[].dpop off, and the default (idp.dpop.mode off)
			resp, body := s.send(t, "GET", path, "DPoP", tok, s.key.Proof("GET", s.px.URL+path, tok))
			if resp.StatusCode != 401 || !strings.Contains(body, "DPoP is off") {
				t.Fatalf("off %s, DPoP scheme: %d %s", path, resp.StatusCode, body)
			}
			if resp, body := s.send(t, "GET", path, "Bearer", tok); resp.StatusCode != 401 || !strings.Contains(body, "cnf.jkt") {
				t.Fatalf("off %s, bound token under Bearer: %d %s", path, resp.StatusCode, body)
			}
		}
	}
	// Bearer under allowed: passes, and a client's DPoP and thumbprint
	// headers are stripped.
	resp, body := s.send(t, "GET", "/dpop/allowed/x", "Bearer", bearer, "forged")
	if resp.StatusCode != 200 {
		t.Fatalf("bearer under allowed: %d %s", resp.StatusCode, body)
	}
	if h := s.up.last(t).Header; h.Get("Dpop") != "" || h.Get(DPoPJKTHeader) != "" || h.Get("Authorization") != "Bearer "+bearer {
		t.Fatalf("bearer upstream headers: %v", h)
	}
	resp, _ = s.send(t, "GET", "/dpop/required/x", "Bearer", bearer)
	ch := strings.Join(resp.Header.Values("WWW-Authenticate"), " | ")
	if resp.StatusCode != 401 || !strings.HasPrefix(ch, `DPoP error="invalid_token"`) || strings.Contains(ch, "Bearer") {
		t.Fatalf("bearer under required: %d %q", resp.StatusCode, ch)
	}
	// allowed, no token: both challenges (RFC 9449 §7.1).
	resp, _ = s.send(t, "GET", "/dpop/allowed/x", "", "")
	if v := resp.Header.Values("WWW-Authenticate"); resp.StatusCode != 401 || len(v) != 2 || !strings.HasPrefix(v[0], "Bearer realm=") || !strings.HasPrefix(v[1], `DPoP algs="`) {
		t.Fatalf("allowed, no token: %d %q", resp.StatusCode, v)
	}
}

// Forward-auth (the verdict endpoint) checks the proof against the
// original method and URI the ingress describes, and refuses a replay.
func TestDPoPForwardAuth_RFC9449_4_3(t *testing.T) {
	s := newDPoPSetup(t, nil)
	tok := s.bound(true)
	orig := "https://app.example.com/dpop/required/x"
	proof := s.key.Proof("GET", orig, tok)
	verify := func(proof string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		s.p.ServeHTTP(w, verifyReq("/auth/verify", "10.1.2.3:1", map[string]string{
			"X-Forwarded-Method": "GET", "X-Forwarded-Uri": "/dpop/required/x?a=b", "X-Forwarded-Host": "app.example.com",
			"X-Forwarded-Proto": "https", "Authorization": "DPoP " + tok, "DPoP": proof}))
		return w
	}
	if w := verify(proof); w.Code != 200 || w.Header().Get(DPoPJKTHeader) != s.key.JKT || w.Header().Get("X-Auth-Request-User") == "" {
		t.Fatalf("verdict: %d %s %v", w.Code, w.Body, w.Header())
	}
	if w := verify(proof); w.Code != 401 || !strings.Contains(w.Header().Get("WWW-Authenticate"), "invalid_dpop_proof") {
		t.Fatalf("replayed: %d %s", w.Code, w.Body)
	}
	if w := verify(s.key.Proof("GET", "http://app.example.com/dpop/required/x", tok)); w.Code != 401 {
		t.Fatalf("htu with the wrong scheme: %d %s", w.Code, w.Body)
	}
}

// RFC 9449 §11.1: a proof replayed to another replica sharing the Redis
// replay cache is refused there.
func TestDPoPReplayAcrossReplicas_RFC9449_11_1(t *testing.T) {
	u := testneed.RedisURL(t, "the shared DPoP replay cache")
	store, err := redisstore.Open(t.Context(), u, "dpop-test-"+time.Now().Format("150405.000000")+":")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	shared := func(c *testSetup) { c.IDP.DPoP.Replay = store.DPoPReplay() }
	a := newDPoPSetup(t, shared)
	b := newDPoPSetup(t, shared)
	b.idp, b.key = a.idp, a.key // b trusts a's provider below
	bcfg := testConfig(a.idp, b.up.URL)
	bcfg.Routes = dpopRoutes
	shared(&bcfg)
	_, b.px = startProxy(t, bcfg, Options{}, true)
	tok := a.bound(false)
	// Both replicas are reached under the same URL by the client (a load
	// balancer): the proof names a's; b sees a Host of its own, so the
	// request to b is sent with a's Host.
	proof := a.key.Proof("GET", a.px.URL+"/dpop/required/x", tok)
	if resp, body := a.send(t, "GET", "/dpop/required/x", "DPoP", tok, proof); resp.StatusCode != 200 {
		t.Fatalf("replica a: %d %s", resp.StatusCode, body)
	}
	req, _ := http.NewRequest("GET", b.px.URL+"/dpop/required/x", nil)
	req.Host = strings.TrimPrefix(a.px.URL, "http://")
	req.Header.Set("Authorization", "DPoP "+tok)
	req.Header.Set("DPoP", proof)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "invalid_dpop_proof") {
		t.Fatalf("replica b accepted the replay: %d %q", resp.StatusCode, resp.Header.Values("WWW-Authenticate"))
	}
	// A fresh proof passes on b: the cache refuses replays only.
	req.Header.Set("DPoP", a.key.Proof("GET", a.px.URL+"/dpop/required/x", tok))
	if resp, err = http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("fresh proof on b: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
}

// RFC 9449 §9: with nonces on, replicas sharing the session secret accept
// each other's nonces (use_dpop_nonce from one, the proof with its nonce
// accepted by the other).
func TestDPoPNonceAcrossReplicas_RFC9449_9(t *testing.T) {
	idpSrv := newProvider(t)
	key := idptest.NewDPoPKey()
	start := func() *httptest.Server {
		cfg := testConfig(idpSrv, newUpstream(t).URL)
		cfg.Routes = dpopRoutes
		cfg.IDP.DPoP.Nonce = true
		cfg.IDP.SessionSecret = []byte("a shared session secret of 32+ bytes!")
		_, px := startProxy(t, cfg, Options{}, true)
		return px
	}
	a, b := start(), start()
	tok := idpSrv.MintDPoP(idpSrv.UserClaims("shortener", "alice", "creator"), key, true)
	host := strings.TrimPrefix(a.URL, "http://")
	send := func(px *httptest.Server, proof string) *http.Response {
		req, _ := http.NewRequest("GET", px.URL+"/dpop/allowed/x", nil)
		req.Host = host
		req.Header.Set("Authorization", "DPoP "+tok)
		req.Header.Set("DPoP", proof)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	url := a.URL + "/dpop/allowed/x"
	resp := send(a, key.Proof("GET", url, tok))
	nonce := resp.Header.Get("DPoP-Nonce")
	if resp.StatusCode != 401 || nonce == "" || !strings.Contains(strings.Join(resp.Header.Values("WWW-Authenticate"), " | "), `DPoP error="use_dpop_nonce"`) {
		t.Fatalf("without a nonce: %d %q %q", resp.StatusCode, resp.Header.Values("WWW-Authenticate"), nonce)
	}
	if resp := send(b, key.ProofWith(dpop.ProofParams{Method: "GET", URL: url, AccessToken: tok, Nonce: nonce})); resp.StatusCode != 200 {
		t.Fatalf("b with a's nonce: %d %q", resp.StatusCode, resp.Header.Values("WWW-Authenticate"))
	}
}

// RFC 8705 §3 and RFC 7800: a certificate-bound token without its
// certificate, and a cnf of another shape, are refused in every mode and
// never reach the upstream; on a public route they go on anonymously.
func TestBoundTokensWithoutBindingRefused_RFC8705_3(t *testing.T) {
	s := newDPoPSetup(t, nil)
	const thumb = "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"
	mint := func(cnf map[string]any) string {
		c := s.idp.UserClaims("shortener", "alice", "creator")
		c["cnf"] = cnf
		return s.idp.Mint(c)
	}
	for name, tok := range map[string]string{
		"x5t#S256 without certificate": mint(map[string]any{"x5t#S256": thumb}),
		"cnf.jwk":                      mint(map[string]any{"jwk": map[string]any{"kty": "EC"}}),
	} {
		for _, path := range []string{"/dpop/off/x", "/dpop/allowed/x", "/dpop/required/x"} {
			before := s.up.count()
			if resp, body := s.send(t, "GET", path, "Bearer", tok); resp.StatusCode != 401 || s.up.count() != before {
				t.Fatalf("%s on %s: %d %s", name, path, resp.StatusCode, body)
			}
		}
		if resp, _ := s.send(t, "GET", "/abc1234", "Bearer", tok); resp.StatusCode != 200 || s.up.last(t).Header.Get("X-Auth-Request-User") != "" {
			t.Fatalf("%s on a public route: %d", name, resp.StatusCode)
		}
		if d, err := s.p.Decide(t.Context(), "POST", "/shorten", tok); err != nil || d.Status != 401 {
			t.Fatalf("Decide = %+v, %v", d, err)
		}
	}
}
