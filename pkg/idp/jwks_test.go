package idp_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

func TestKeyRotationOneRefetch(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, nil)
	old := srv.Mint(map[string]any{"aud": clientID})
	if _, err := p.Verify(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	before := srv.JWKSFetches()
	srv.RotateKey()
	fresh := srv.Mint(map[string]any{"aud": clientID})
	if _, err := p.Verify(t.Context(), fresh); err != nil {
		t.Fatalf("token with the new kid rejected: %v", err)
	}
	if got := srv.JWKSFetches() - before; got != 1 {
		t.Fatalf("rotation caused %d JWKS fetches, want exactly 1", got)
	}
	// The old key left the JWKS: its tokens stop verifying, even the one
	// that was cached (the cache is dropped when the key set changes).
	if _, err := p.Verify(t.Context(), old); !errors.Is(err, idp.ErrInvalidToken) {
		t.Fatalf("token of a removed key still accepted: %v", err)
	}
}

func TestUnknownKIDStormIsBounded(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, func(c *idp.Config) { c.UnknownKIDRefreshInterval = time.Hour })
	before := srv.JWKSFetches()
	var wg sync.WaitGroup
	var rejected atomic.Int64
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				tok := srv.MintWith(idptest.MintOptions{KID: fmt.Sprintf("random-%d-%d", g, i)}, map[string]any{"aud": clientID})
				if _, err := p.Verify(t.Context(), tok); errors.Is(err, idp.ErrInvalidToken) {
					rejected.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if rejected.Load() != 800 {
		t.Fatalf("rejected %d of 800 random-kid tokens", rejected.Load())
	}
	if got := srv.JWKSFetches() - before; got != 1 {
		t.Fatalf("800 random kids caused %d JWKS fetches, want 1 per interval", got)
	}
	if s := p.Stats().Keys; s.UnknownKIDSkips == 0 {
		t.Fatalf("stats did not count skipped refetches: %+v", s)
	}
}

// A flood of random kids must not keep a genuine rotation out for longer
// than one UnknownKIDRefreshInterval. In a synctest bubble (the provider
// served in memory), so the interval is measured on the bubble's clock
// and the test waits for no real time.
func TestRotationAfterStormWithinOneInterval(t *testing.T) {
	srv := idptest.NewServer(t)
	const interval = 300 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		p := newMemoryPlugin(t, srv, func(c *idp.Config) { c.UnknownKIDRefreshInterval = interval })
		for i := 0; i < 50; i++ {
			tok := srv.MintWith(idptest.MintOptions{KID: fmt.Sprintf("junk-%d", i)}, map[string]any{"aud": clientID})
			_, _ = p.Verify(t.Context(), tok)
		}
		srv.RotateKey()
		fresh := srv.Mint(map[string]any{"aud": clientID})
		rotated := time.Now()
		for {
			_, err := p.Verify(t.Context(), fresh)
			if err == nil {
				break
			}
			if time.Since(rotated) > interval {
				t.Fatalf("rotated key still rejected %v after the rotation, more than one interval (%v): %v", time.Since(rotated), interval, err)
			}
			time.Sleep(interval / 4)
		}
	})
}

// Several failed refreshes (the bubble's clock runs 200 ms past four
// TTLs) leave the cached keys working and the plugin ready.
func TestProviderDownAfterStartKeepsCachedKeys(t *testing.T) {
	srv := idptest.NewServer(t)
	synctest.Test(t, func(t *testing.T) {
		p := newMemoryPlugin(t, srv, func(c *idp.Config) { c.JWKSCacheTTL = 50 * time.Millisecond; c.DisableVerifiedCache = true })
		srv.SetDown(true)
		defer srv.SetDown(false)
		time.Sleep(200 * time.Millisecond) // several failed refreshes
		synctest.Wait()
		tok := srv.Mint(map[string]any{"aud": clientID})
		if _, err := p.Verify(t.Context(), tok); err != nil {
			t.Fatalf("cached keys stopped working while the provider is down: %v", err)
		}
		if !p.Ready() {
			t.Fatal("plugin reports not ready although it has keys")
		}
		if s := p.Stats().Keys; s.Failures == 0 {
			t.Fatalf("failed refreshes not counted: %+v", s)
		}
	})
}

func TestProviderDownAtStartThenRecovers(t *testing.T) {
	srv := idptest.NewServer(t)
	srv.SetDown(true)
	p, err := idp.New(t.Context(), idp.Config{ServerURL: srv.URL, Realm: srv.Realm, ClientID: clientID})
	if err != nil {
		t.Fatalf("New must not fail while the provider is down: %v", err)
	}
	defer p.Close()
	tok := srv.Mint(map[string]any{"aud": clientID})
	if _, err := p.Verify(t.Context(), tok); !errors.Is(err, idp.ErrUnavailable) {
		t.Fatalf("Verify = %v, want ErrUnavailable", err)
	}
	h := p.Middleware(&okHandler{})
	rec := do(t, h, "GET", "/x", "Authorization", "Bearer "+tok)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("status %d Retry-After %q, want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	if p.Ready() {
		t.Fatal("Ready while the provider is down")
	}
	srv.SetDown(false)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := p.WaitReady(ctx); err != nil {
		t.Fatalf("did not recover: %v", err)
	}
	if rec := do(t, h, "GET", "/x", "Authorization", "Bearer "+tok); rec.Code != http.StatusOK {
		t.Fatalf("after recovery: status %d", rec.Code)
	}
}

func TestKeysRemovedStopVerifyingAfterRefresh(t *testing.T) {
	srv := idptest.NewServer(t)
	p := newPlugin(t, srv, nil)
	tok := srv.Mint(map[string]any{"aud": clientID})
	if _, err := p.Verify(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	srv.RotateKey()
	if err := p.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Verify(t.Context(), tok); !errors.Is(err, idp.ErrInvalidToken) {
		t.Fatalf("removed key still verifies after refresh: %v", err)
	}
}

func TestEncryptionAndSymmetricKeysNeverVerify(t *testing.T) {
	srv := idptest.NewServer(t)
	// A symmetric key in the JWKS must not make HS256 tokens acceptable, even
	// if an operator lists it.
	srv.PublishJWK(map[string]any{"kty": "oct", "kid": "hmac", "alg": "HS256", "k": "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"})
	p := newPlugin(t, srv, nil)
	rs, _ := srv.KID()
	// The JWKS carries "enc-<kid>" with use=enc: a token naming it is refused.
	tok := srv.MintWith(idptest.MintOptions{KID: "enc-" + rs}, map[string]any{"aud": clientID})
	if _, err := p.Verify(t.Context(), tok); !errors.Is(err, idp.ErrInvalidToken) {
		t.Fatalf("token naming the encryption key accepted: %v", err)
	}
	if n := p.Stats().Keys.Keys; n != 2 {
		t.Fatalf("usable keys = %d, want 2 (RS256 and ES256 signing keys only)", n)
	}
}

// TestWeakRSAKeysNeverVerify: an RSA key under 2048 bits in the JWKS (a
// misconfigured or legacy provider key) is not a verification key.
func TestWeakRSAKeysNeverVerify(t *testing.T) {
	srv := idptest.NewServer(t)
	for _, bits := range []int{1024, 1536, 2047} {
		weak, err := rsa.GenerateKey(rand.Reader, bits)
		if err != nil {
			t.Fatal(err)
		}
		kid := fmt.Sprintf("weak-%d", bits)
		srv.PublishJWK(map[string]any{"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
			"n": base64.RawURLEncoding.EncodeToString(weak.N.Bytes()),
			"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(weak.E)).Bytes())})
		p := newPlugin(t, srv, nil)
		tok := srv.MintWith(idptest.MintOptions{Key: weak, KID: kid}, map[string]any{"aud": clientID})
		if _, err := p.Verify(t.Context(), tok); !errors.Is(err, idp.ErrInvalidToken) {
			t.Errorf("token signed by a %d-bit RSA key of the JWKS accepted: %v", bits, err)
		}
		tok = srv.MintWith(idptest.MintOptions{Key: weak, KID: "-"}, map[string]any{"aud": clientID}) // no kid: every key is tried
		if _, err := p.Verify(t.Context(), tok); !errors.Is(err, idp.ErrInvalidToken) {
			t.Errorf("kid-less token signed by a %d-bit RSA key of the JWKS accepted: %v", bits, err)
		}
	}
}

func TestJWKSDocumentLimits(t *testing.T) {
	tests := []struct {
		name string
		jwks func(w http.ResponseWriter)
	}{
		{"oversized", func(w http.ResponseWriter) {
			_, _ = w.Write([]byte(`{"keys":[` + strings.Repeat(" ", 2<<20) + `]}`))
		}},
		{"not JSON", func(w http.ResponseWriter) { _, _ = w.Write([]byte("<html>")) }},
		{"no usable key", func(w http.ResponseWriter) { _, _ = w.Write([]byte(`{"keys":[{"kty":"oct","k":"AAAA"}]}`)) }},
		{"error status", func(w http.ResponseWriter) { w.WriteHeader(500) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var issuer string
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/.well-known/openid-configuration") {
					fmt.Fprintf(w, `{"issuer":%q,"jwks_uri":%q}`, issuer, issuer+"/protocol/openid-connect/certs")
					return
				}
				tt.jwks(w)
			}))
			defer ts.Close()
			issuer = ts.URL + "/realms/demo"
			p, err := idp.New(t.Context(), idp.Config{ServerURL: ts.URL, Realm: "demo", ClientID: clientID, HTTPTimeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if err := p.Refresh(t.Context()); err == nil {
				t.Fatal("Refresh accepted a bad JWKS document")
			}
			if p.Ready() {
				t.Fatal("Ready with a bad JWKS document")
			}
		})
	}
}

func TestDiscoveryIssuerMismatchRefused(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"issuer":"https://evil.example/realms/demo","jwks_uri":"https://evil.example/certs"}`))
	}))
	defer ts.Close()
	p, err := idp.New(t.Context(), idp.Config{ServerURL: ts.URL, Realm: "demo", ClientID: clientID})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Refresh(t.Context()); !errors.Is(err, idp.ErrDiscovery) || !strings.Contains(err.Error(), "https://evil.example/realms/demo") {
		t.Fatalf("Refresh = %v, want issuer mismatch", err)
	}
}

func TestHTTPTimeoutBoundsProviderCalls(t *testing.T) {
	block := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer ts.Close()
	defer close(block)
	p, err := idp.New(t.Context(), idp.Config{ServerURL: ts.URL, Realm: "demo", ClientID: clientID, HTTPTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	start := time.Now()
	if err := p.Refresh(t.Context()); err == nil {
		t.Fatal("Refresh succeeded against a hanging provider")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Refresh took %v despite HTTPTimeout=200ms", d)
	}
}
