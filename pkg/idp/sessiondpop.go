package idp

import (
	"bytes"
	"crypto"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp/dpop"
)

// Browser sessions bound to the plugin's own key (SessionConfig.DPoPKeys,
// RFC 9449). The plugin is the OAuth client of the sign-in: where the
// provider advertises DPoP, it sends a proof by its key with the code
// exchange and with every refresh, so the access tokens it keeps are bound
// to that key. The browser never sees the key and sends no proof: the
// plugin, holding the key, checks its own binding on each request the
// session authenticates (the token's cnf.jkt is one of its keys').

// sessionDPoP is the plugin's DPoP client state: its keys and the token
// endpoint's last nonce.
type sessionDPoP struct {
	signer crypto.Signer
	alg    string   // signer's JWS algorithm
	jkts   []string // thumbprints of every accepted key, the signer's first

	mu    sync.Mutex
	nonce string // the token endpoint's DPoP-Nonce, "" until it gives one
}

// newSessionDPoP returns the state of keys; nil without keys.
func newSessionDPoP(keys []crypto.Signer) (*sessionDPoP, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	s := &sessionDPoP{signer: keys[0]}
	for i, k := range keys {
		if k == nil {
			return nil, fmt.Errorf("key %d is nil", i+1)
		}
		alg, err := dpop.KeyAlgorithm(k.Public())
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		jkt, err := dpop.ThumbprintOfKey(k.Public())
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		if i == 0 {
			s.alg = alg
		}
		s.jkts = append(s.jkts, jkt)
	}
	return s, nil
}

// owns reports whether jkt is the thumbprint of one of the keys.
func (s *sessionDPoP) owns(jkt string) bool {
	for _, k := range s.jkts {
		if thumbprintEqual(k, jkt) {
			return true
		}
	}
	return false
}

// tokenHTTPClient is the client of the calls to the token endpoint made
// for sessions (code exchange, refresh): Config.HTTPClient, whose
// transport adds the plugin's DPoP proofs when SessionConfig.DPoPKeys are
// set.
func (p *Plugin) tokenHTTPClient() *http.Client {
	if p.sessionDPoP == nil {
		return p.cfg.HTTPClient
	}
	c := *p.cfg.HTTPClient
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = &dpopTransport{base: base, s: p.sessionDPoP, now: p.cfg.Now,
		meta: func() *providerMetadata { return p.keys.meta.Load() }}
	return &c
}

// dpopTransport adds a DPoP proof to each POST to the token endpoint of
// a provider that advertises the key's algorithm (RFC 9449 §5), and
// answers the endpoint's use_dpop_nonce once (§8).
type dpopTransport struct {
	base http.RoundTripper
	s    *sessionDPoP
	now  func() time.Time // the proofs' iat: Config.Now
	meta func() *providerMetadata
}

// maxNonceAnswer bounds the error body read to recognise use_dpop_nonce.
const maxNonceAnswer = 16 << 10

func (t *dpopTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	meta := t.meta()
	if req.Method != http.MethodPost || meta == nil || meta.TokenEndpoint == "" ||
		req.URL.String() != meta.TokenEndpoint || !slices.Contains(meta.DPoPAlgs, t.s.alg) {
		return t.base.RoundTrip(req)
	}
	resp, err := t.send(req, req.Body)
	if err != nil || resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusUnauthorized ||
		resp.Header.Get("DPoP-Nonce") == "" || req.GetBody == nil {
		return resp, err
	}
	// A use_dpop_nonce answer: the request again, with the nonce just
	// recorded. Any other error goes back to x/oauth2 as it came.
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxNonceAnswer))
	_ = resp.Body.Close()
	var e struct {
		Error string `json:"error"`
	}
	if rerr != nil || json.Unmarshal(body, &e) != nil || e.Error != dpop.CodeUseNonce {
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, rerr
	}
	again, err := req.GetBody()
	if err != nil {
		return nil, fmt.Errorf("idp: DPoP nonce retry: %w", err)
	}
	return t.send(req, again)
}

// send sends req with body and a fresh proof (with the last nonce), and
// records the nonce the answer carries.
func (t *dpopTransport) send(req *http.Request, body io.ReadCloser) (*http.Response, error) {
	t.s.mu.Lock()
	nonce := t.s.nonce
	t.s.mu.Unlock()
	proof, err := dpop.NewProof(t.s.signer, dpop.ProofParams{Method: req.Method, URL: req.URL.String(), Nonce: nonce, IssuedAt: t.now()})
	if err != nil {
		if body != nil {
			_ = body.Close()
		}
		return nil, fmt.Errorf("idp: DPoP proof: %w", err)
	}
	r := req.Clone(req.Context())
	r.Body = body
	r.Header.Set("DPoP", proof)
	resp, err := t.base.RoundTrip(r)
	if err == nil {
		if n := resp.Header.Get("DPoP-Nonce"); n != "" {
			t.s.mu.Lock()
			t.s.nonce = n
			t.s.mu.Unlock()
		}
	}
	return resp, err
}

// checkSessionBinding checks the binding of a session's DPoP-bound token,
// whatever the route's DPoP mode: it is the plugin's own (one of
// SessionConfig.DPoPKeys), and the plugin holds the key, so no proof is
// asked of the browser. A token bound to another key (one since removed
// from DPoPKeys, or a token this plugin did not obtain) ends the session:
// its cookies are cleared (on v) and the request has no credential.
func (p *Plugin) checkSessionBinding(r *http.Request, id *Identity, v *Verdict) error {
	if p.sessionDPoP != nil && p.sessionDPoP.owns(id.cnf.value) {
		return nil
	}
	p.cfg.Logger.Info("idp: session ended: its access token is bound (cnf.jkt) to a key that is not this proxy's")
	v.Cookies = p.sessions.ClearCookies(r)
	v.Session = false
	return ErrNoToken
}
