package idp

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"
)

// verifyKey is one usable signature-verification key of the provider.
type verifyKey struct {
	kid string
	alg string // the JWK's own alg, "" when absent
	key crypto.PublicKey
}

// keySnapshot is an immutable view of the provider's key set.
type keySnapshot struct {
	byKID  map[string]verifyKey
	all    []verifyKey // for tokens without kid
	digest [32]byte    // identifies the key material, to detect changes
	gen    uint64      // bumped whenever digest changes
}

// minRSABits is the smallest RSA modulus accepted from the JWKS (RFC 7518
// §3.3 requires 2048 bits; shorter keys can be factored or forged).
const minRSABits = 2048

// parseJWKS turns a JWKS document into a snapshot. Keys that cannot verify
// signatures are left out: encryption keys (use "enc"), symmetric keys,
// RSA keys shorter than 2048 bits, keys with key_ops lacking "verify",
// unknown key types. Private key
// material, if a provider ever published it, is reduced to the public half.
func parseJWKS(body []byte, log *slog.Logger) (*keySnapshot, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("idp: jwks: %w", err)
	}
	s := &keySnapshot{byKID: make(map[string]verifyKey, len(doc.Keys))}
	var material []string
	for i, raw := range doc.Keys {
		jwk, err := jwkset.NewJWKFromRawJSON(raw, jwkset.JWKMarshalOptions{}, jwkset.JWKValidateOptions{})
		if err != nil {
			log.Debug("idp: skipping unusable JWK", "index", i, "error", err)
			continue
		}
		m := jwk.Marshal()
		if m.USE != "" && m.USE != jwkset.UseSig {
			continue
		}
		if len(m.KEYOPS) > 0 && !slices.Contains(m.KEYOPS, jwkset.KeyOpsVerify) {
			continue
		}
		key := jwk.Key()
		if pk, ok := key.(interface{ Public() crypto.PublicKey }); ok {
			key = pk.Public()
		}
		switch key := key.(type) {
		case *rsa.PublicKey:
			if key.N.BitLen() < minRSABits {
				log.Warn("idp: skipping an RSA JWK shorter than 2048 bits", "kid", m.KID, "bits", key.N.BitLen())
				continue
			}
		case *ecdsa.PublicKey, ed25519.PublicKey:
		default:
			continue // symmetric or unknown: never a verification key here
		}
		der, err := x509.MarshalPKIXPublicKey(key)
		if err != nil {
			continue
		}
		vk := verifyKey{kid: m.KID, alg: m.ALG.String(), key: key}
		if vk.kid != "" {
			if _, dup := s.byKID[vk.kid]; dup {
				log.Warn("idp: JWKS has a duplicate kid; keeping the first", "kid", vk.kid)
				continue
			}
			s.byKID[vk.kid] = vk
		}
		s.all = append(s.all, vk)
		material = append(material, vk.kid+"\x00"+vk.alg+"\x00"+string(der))
	}
	slices.Sort(material)
	s.digest = sha256.Sum256([]byte(strings.Join(material, "\x01")))
	return s, nil
}

// algMatchesKey reports whether a token signed with alg can be verified
// with key, and whether the JWK's own alg (if any) agrees.
func algMatchesKey(alg string, k verifyKey) bool {
	if k.alg != "" && k.alg != alg {
		return false
	}
	switch key := k.key.(type) {
	case *rsa.PublicKey:
		return strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
	case *ecdsa.PublicKey:
		switch alg {
		case "ES256":
			return key.Curve == elliptic.P256()
		case "ES384":
			return key.Curve == elliptic.P384()
		case "ES512":
			return key.Curve == elliptic.P521()
		}
	case ed25519.PublicKey:
		return alg == "EdDSA"
	}
	return false
}

// KeyStats describes the state of the key cache, for readiness and metrics.
type KeyStats struct {
	Ready           bool      // keys have been loaded at least once
	Keys            int       // usable verification keys
	Refreshes       uint64    // successful fetches
	Failures        uint64    // failed fetches
	UnknownKIDSkips uint64    // unknown-kid refetches refused by the rate limit
	LastRefresh     time.Time // zero before the first success
}

// keySet fetches and caches the provider's keys. Reads are lock-free
// (atomic snapshot); fetches are single-flight.
type keySet struct {
	client   *http.Client
	issuer   string
	timeout  time.Duration
	ttl      time.Duration
	interval time.Duration // least time between two unknown-kid refetches
	log      *slog.Logger
	onChange func() // called when the key material changed

	snap atomic.Pointer[keySnapshot]
	meta atomic.Pointer[providerMetadata]

	mu          sync.Mutex
	flight      *flight
	lastUnknown time.Time

	refreshes, failures, skips atomic.Uint64
	lastRefresh                atomic.Int64 // unix nanos
}

type flight struct {
	done chan struct{}
	err  error
}

func (k *keySet) current() *keySnapshot { return k.snap.Load() }

// refresh fetches the key set once, joining a fetch already under way.
// The fetch itself is detached from ctx (one caller giving up does not
// cancel it for the others); ctx only bounds the wait.
func (k *keySet) refresh(ctx context.Context) error {
	k.mu.Lock()
	f := k.startLocked()
	k.mu.Unlock()
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (k *keySet) startLocked() *flight {
	if k.flight != nil {
		return k.flight
	}
	f := &flight{done: make(chan struct{})}
	k.flight = f
	go func() {
		f.err = k.fetch()
		k.mu.Lock()
		k.flight = nil
		k.mu.Unlock()
		close(f.done)
	}()
	return f
}

// refreshUnknownKID is called when a token names a kid the snapshot lacks.
// It joins a fetch under way, or starts one unless another unknown-kid
// fetch started less than k.interval ago, in which case it returns at once:
// callers never queue behind the rate limit, so a flood of random kids costs
// one provider request per interval and delays a genuine rotation by at most
// one interval.
func (k *keySet) refreshUnknownKID(ctx context.Context) {
	k.mu.Lock()
	f := k.flight
	if f == nil {
		now := time.Now()
		if !k.lastUnknown.IsZero() && now.Sub(k.lastUnknown) < k.interval {
			k.mu.Unlock()
			k.skips.Add(1)
			return
		}
		k.lastUnknown = now
		f = k.startLocked()
	}
	k.mu.Unlock()
	select {
	case <-f.done:
	case <-ctx.Done():
	}
}

// fetch discovers the provider (once) and loads its JWKS.
func (k *keySet) fetch() error {
	ctx, cancel := context.WithTimeout(context.Background(), k.timeout)
	defer cancel()
	err := k.fetchCtx(ctx)
	if err != nil {
		k.failures.Add(1)
		k.log.Warn("idp: key set refresh failed", "error", err)
		return err
	}
	k.refreshes.Add(1)
	k.lastRefresh.Store(time.Now().UnixNano())
	return nil
}

func (k *keySet) fetchCtx(ctx context.Context) error {
	meta := k.meta.Load()
	if meta == nil {
		m, err := discover(ctx, k.client, k.issuer)
		if err != nil {
			return err
		}
		k.meta.Store(m)
		meta = m
	}
	var raw json.RawMessage
	if err := getJSON(ctx, k.client, meta.JWKSURI, &raw); err != nil {
		return fmt.Errorf("idp: jwks: %w", err)
	}
	s, err := parseJWKS(raw, k.log)
	if err != nil {
		return err
	}
	if len(s.all) == 0 {
		return fmt.Errorf("idp: jwks: no usable signature key in %s", meta.JWKSURI)
	}
	old := k.snap.Load()
	switch {
	case old == nil:
		s.gen = 1
	case old.digest == s.digest:
		s.gen = old.gen
	default:
		s.gen = old.gen + 1
	}
	k.snap.Store(s)
	if old == nil || old.gen != s.gen {
		k.log.Info("idp: key set loaded", "keys", len(s.all), "generation", s.gen)
		if k.onChange != nil {
			k.onChange()
		}
	}
	return nil
}

// run loads the keys until ctx is done: first with a quick backoff until
// they are available, then every ttl. A failed refresh keeps the cached
// keys (a provider outage must not take the service down) and is retried
// sooner than the ttl.
func (k *keySet) run(ctx context.Context) {
	const (
		minBackoff = 250 * time.Millisecond
		maxBackoff = 30 * time.Second
	)
	backoff := minBackoff
	for {
		var wait time.Duration
		if err := k.refresh(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			wait = min(backoff, k.ttl)
			if k.snap.Load() == nil {
				wait = min(wait, 5*time.Second) // not ready: keep trying often
			}
			backoff = min(backoff*2, maxBackoff)
		} else {
			backoff = minBackoff
			wait = k.ttl
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (k *keySet) stats() KeyStats {
	s := KeyStats{
		Refreshes:       k.refreshes.Load(),
		Failures:        k.failures.Load(),
		UnknownKIDSkips: k.skips.Load(),
	}
	if snap := k.snap.Load(); snap != nil {
		s.Ready = true
		s.Keys = len(snap.all)
	}
	if ns := k.lastRefresh.Load(); ns != 0 {
		s.LastRefresh = time.Unix(0, ns)
	}
	return s
}
