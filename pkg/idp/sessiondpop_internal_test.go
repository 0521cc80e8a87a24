package idp

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// proofNonce is the nonce claim of a DPoP proof (unverified: the test
// only looks at what the client sent).
func proofNonce(t *testing.T, proof string) string {
	t.Helper()
	parts := strings.Split(proof, ".")
	if len(parts) != 3 {
		t.Fatalf("proof %q is not a JWS", proof)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Nonce string `json:"nonce"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c.Nonce
}

// The token client's DPoP transport: a proof on POSTs to the token
// endpoint only, and only where discovery lists the key's algorithm (RFC
// 9449 §5.1); a use_dpop_nonce answer retried once with the nonce (§8),
// the nonce kept for the next call; any other error, even with a
// DPoP-Nonce header, handed back whole and not retried.
func TestSessionDPoPTransport_RFC9449_8(t *testing.T) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sd, err := newSessionDPoP([]crypto.Signer{k})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	var answer atomic.Value // "nonce" or "invalid_grant"
	answer.Store("nonce")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		proof := r.Header.Get("DPoP")
		if r.URL.Path != "/token" {
			if proof != "" {
				t.Errorf("a proof sent to %s", r.URL.Path)
			}
			return
		}
		if proof == "" {
			w.WriteHeader(299) // the test's "no proof" mark
			return
		}
		w.Header().Set("DPoP-Nonce", "n1")
		w.Header().Set("Content-Type", "application/json")
		switch {
		case answer.Load() == "invalid_grant":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"invalid_grant"}`)
		case proofNonce(t, proof) != "n1":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"use_dpop_nonce"}`)
		default:
			_, _ = io.WriteString(w, `{"access_token":"x"}`)
		}
	}))
	t.Cleanup(srv.Close)
	meta := &providerMetadata{TokenEndpoint: srv.URL + "/token", DPoPAlgs: []string{"ES256"}}
	c := &http.Client{Transport: &dpopTransport{base: http.DefaultTransport, s: sd, now: time.Now,
		meta: func() *providerMetadata { return meta }}}
	post := func(path string) (int, string) {
		t.Helper()
		resp, err := c.Post(srv.URL+path, "application/x-www-form-urlencoded", strings.NewReader("grant_type=refresh_token"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	if st, _ := post("/token"); st != 200 || calls.Load() != 2 {
		t.Fatalf("first call: %d after %d requests, want 200 after 2 (use_dpop_nonce, retry)", st, calls.Load())
	}
	calls.Store(0)
	if st, _ := post("/token"); st != 200 || calls.Load() != 1 {
		t.Fatalf("second call: %d after %d requests, want 200 at once with the kept nonce", st, calls.Load())
	}
	calls.Store(0)
	answer.Store("invalid_grant")
	if st, body := post("/token"); st != 400 || !strings.Contains(body, "invalid_grant") || calls.Load() != 1 {
		t.Fatalf("invalid_grant: %d %q after %d requests, want it whole after 1", st, body, calls.Load())
	}
	post("/revoke") // the handler fails the test on a proof
	meta = &providerMetadata{TokenEndpoint: srv.URL + "/token", DPoPAlgs: []string{"RS256"}}
	if st, _ := post("/token"); st != 299 {
		t.Fatalf("a provider without ES256 among its DPoP algorithms got a proof (%d)", st)
	}
}
