package idp

// The provider's keys: keySet below fetches, parses and refreshes them, and
// selectKey (keyfunc.go) picks the key of a token.
//
// What keyfunc (github.com/MicahParks/keyfunc/v3, named in DESIGN §3) does
// here, plainly: each fetch puts the keys, as parsed JWKs, into jwkset's
// memory storage (keySet.store, the one JWKS store), and keyfunc reads
// that store through keyStore (keyfunc.go), whose KeyRead applies our
// unknown-kid rule (one shared, rate-limited refetch) to a kid the store
// lacks; keyfunc refuses a JWK whose own alg differs from the token's. It
// serves the tokens whose kid is not in the current key snapshot (the
// snapshot is the same keys, parsed once into crypto keys and indexed by
// kid). Every other token bypasses it: a known kid's key comes straight
// from the snapshot, because keyfunc needs a jwt.Token with a header map
// and marshals the JWK again for every key it returns, work the
// verification of each new token would pay (bench/README.md, "Key
// selection"); and a token without kid is offered every key that fits its
// alg (keyfunc would offer every key, whatever its alg). algMatchesKey
// applies keyfunc's alg check on the snapshot path, so both paths accept
// exactly the same keys.
//
// The stock jwkset HTTP storage (jwkset.NewStorageFromHTTP,
// keyfunc.NewDefault) is not used at all, because:
//
//   - callers block on its rate limiter: an unknown kid makes the request
//     wait for the limiter (up to RateLimitWaitMax), so a flood of random
//     kids queues every request behind it and delays a genuine rotation by
//     as long as the flood lasts; here callers fail fast and one fetch is
//     scheduled for the end of the interval;
//   - concurrent refreshes are not coalesced: each waiting caller may start
//     its own fetch; here one fetch is in flight at a time and everyone
//     joins it (single flight), with a negative cache of kids found absent;
//   - it needs the JWKS URL when it is created, before OpenID discovery has
//     run; here discovery happens in the background, New never blocks on
//     the provider, and a provider that is down at start is retried;
//   - it has no bound on the JWKS response size; here it is 1 MiB, and keys
//     that cannot verify (enc, symmetric, RSA < 2048 bits) are dropped.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// KeyStats describes the state of the key cache, for readiness and metrics.
type KeyStats struct {
	Ready           bool      // keys have been loaded at least once
	Keys            int       // usable verification keys
	Refreshes       uint64    // successful fetches
	Failures        uint64    // failed fetches
	UnknownKIDSkips uint64    // unknown-kid refetches refused by the rate limit
	UnknownKIDWaits uint64    // requests that gave up waiting for an unknown-kid fetch (UnknownKIDWait)
	LastRefresh     time.Time // zero before the first success
	// LastError is why the last fetch failed (discovery unreachable, an
	// issuer mismatch, an HTTP status, no usable key), nil when it
	// succeeded: with Ready false, why the keys are missing; with Ready
	// true, why they are stale.
	LastError error
}

// keySet fetches and caches the provider's keys. Reads are lock-free
// (atomic snapshot); fetches are single-flight.
type keySet struct {
	client   *http.Client
	issuer   string
	keycloak bool // a Keycloak realm: absent endpoints get Keycloak's paths
	timeout  time.Duration
	ttl      time.Duration
	interval time.Duration // least time between two unknown-kid refetches
	wait     time.Duration // longest a request waits for an unknown-kid fetch
	log      *slog.Logger
	onChange func()       // called when the key material changed
	tracer   trace.Tracer // nil: no spans

	snap atomic.Pointer[keySnapshot]
	// store holds the keys of snap as parsed JWKs, and kf is keyfunc over
	// it (see keyStore and selectKey): the JWKS store every kind of token
	// is verified with.
	store *jwkset.MemoryJWKSet
	kf    keyfunc.Keyfunc
	meta  atomic.Pointer[providerMetadata]

	// firstDone is closed when the first fetch has ended, the keys loaded
	// or not (see awaitFirst); firstWait is called when a request starts
	// waiting for it (a test hook; nil otherwise).
	firstDone chan struct{}
	firstOnce sync.Once
	firstWait func()

	mu          sync.Mutex
	flight      *flight
	lastUnknown time.Time            // start of the last unknown-kid fetch
	deferred    bool                 // an unknown-kid fetch is scheduled for the next slot
	absent      map[string]time.Time // kid -> until when it is known to be absent
	closed      bool

	refreshes, failures, skips atomic.Uint64
	waitExpired                atomic.Uint64         // requests that gave up waiting for an unknown-kid fetch
	unreachable                atomic.Bool           // the last fetch failed
	lastRefresh                atomic.Int64          // unix nanos
	lastErr                    atomic.Pointer[error] // the last fetch's error; nil after a success
}

type flight struct {
	done chan struct{}
	err  error
}

func (k *keySet) current() *keySnapshot { return k.snap.Load() }

// awaitFirst waits for the first key set while the first fetch is under
// way, at most d and while ctx lasts (Config.FirstKeysWait). It returns
// nil when the keys are loaded; ErrUnavailable at once when the first
// fetch has ended without them (the provider is down: no request waits
// for the retries), or when ctx ends; errKeyWait past d.
func (k *keySet) awaitFirst(ctx context.Context, d time.Duration) error {
	if k.current() != nil {
		return nil
	}
	if d <= 0 || !k.firstPending() {
		return ErrUnavailable
	}
	if k.firstWait != nil {
		k.firstWait()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-k.firstDone:
	case <-ctx.Done():
	case <-t.C:
		if k.current() == nil {
			return errKeyWait
		}
	}
	if k.current() == nil {
		return ErrUnavailable
	}
	return nil
}

// firstPending reports whether the first fetch has not ended yet.
func (k *keySet) firstPending() bool {
	select {
	case <-k.firstDone:
		return false
	default:
		return true
	}
}

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

// Unknown kids. A token whose kid the snapshot lacks may announce a key
// rotation, or be noise (a client of another realm, random kids). The rule:
//
//   - At most one unknown-kid fetch per interval (default 1 s) for the
//     whole process; callers never wait on that budget: when it is spent
//     they fail at once, and one fetch is scheduled for the end of the
//     interval, so a rotated key is picked up within one interval however
//     much noise arrives, and the provider sees at most one fetch per
//     interval from this instance.
//   - A kid that a completed fetch did not contain is remembered as absent
//     for absentTTL (5 intervals): asking for it again spends nothing and
//     schedules nothing. The memory is bounded (maxAbsent kids).
//   - The caller that starts a fetch, or finds one under way, waits for it
//     (bounded by the HTTP timeout and its own context), then looks again.
const (
	maxAbsent       = 4096
	absentIntervals = 5
)

// unknownKID applies the rule above for kid and returns the key when the
// key set, refetched or not, now holds it.
//
// The wait for the fetch is bounded by k.wait: past it, the result is
// errKeyWait (503), and the fetch goes on for later requests.
func (k *keySet) unknownKID(ctx context.Context, kid string) (verifyKey, bool, error) {
	now := time.Now()
	k.mu.Lock()
	if until, ok := k.absent[kid]; ok && now.Before(until) {
		k.mu.Unlock()
		k.skips.Add(1)
		return verifyKey{}, false, nil
	}
	f := k.flight
	if f == nil {
		if since := now.Sub(k.lastUnknown); !k.lastUnknown.IsZero() && since < k.interval {
			k.scheduleLocked(k.interval - since)
			k.mu.Unlock()
			k.skips.Add(1)
			if k.unreachable.Load() {
				// The provider did not answer the last fetch: the kid
				// may be a new key nobody could fetch yet.
				return verifyKey{}, false, errKeysUnreachable
			}
			return verifyKey{}, false, nil
		}
		k.lastUnknown = now
		f = k.startLocked()
	}
	k.mu.Unlock()
	if k.wait > 0 {
		t := time.NewTimer(k.wait)
		defer t.Stop()
		select {
		case <-f.done:
		case <-ctx.Done():
			return verifyKey{}, false, nil
		case <-t.C:
			k.waitExpired.Add(1)
			return verifyKey{}, false, errKeyWait
		}
	} else {
		select {
		case <-f.done:
		case <-ctx.Done():
			return verifyKey{}, false, nil
		}
	}
	if snap := k.current(); snap != nil {
		if vk, ok := snap.byKID[kid]; ok {
			return vk, true, nil
		}
	}
	if f.err != nil {
		return verifyKey{}, false, errKeysUnreachable
	}
	k.markAbsent(kid, time.Now())
	return verifyKey{}, false, nil
}

// errKeyWait: a token's kid is not among the cached keys and the key set
// fetched for it did not arrive within Config.UnknownKIDWait.
var errKeyWait = fmt.Errorf("%w: the identity provider did not send its keys in time", ErrUnavailable)

// errKeysUnreachable: a token's kid is not among the cached keys and the
// provider did not answer the fetch for it (or the last one), so whether it
// names a new key cannot be told.
var errKeysUnreachable = fmt.Errorf("%w: the identity provider's keys could not be fetched", ErrUnavailable)

// scheduleLocked arranges one unknown-kid fetch after d, unless one is
// already scheduled.
func (k *keySet) scheduleLocked(d time.Duration) {
	if k.deferred || k.closed {
		return
	}
	k.deferred = true
	time.AfterFunc(d, func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		k.deferred = false
		now := time.Now()
		if k.closed || k.flight != nil || now.Sub(k.lastUnknown) < k.interval {
			return // closed, or another unknown-kid fetch took this slot
		}
		k.lastUnknown = now
		k.startLocked()
	})
}

// markAbsent remembers that kid was not in a fetched key set.
func (k *keySet) markAbsent(kid string, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.absent == nil {
		k.absent = make(map[string]time.Time)
	}
	if len(k.absent) >= maxAbsent {
		for id, until := range k.absent {
			if !now.Before(until) {
				delete(k.absent, id)
			}
		}
		if len(k.absent) >= maxAbsent {
			return // a flood of distinct kids: they are refused all the same
		}
	}
	k.absent[kid] = now.Add(absentIntervals * k.interval)
}

// close stops scheduling unknown-kid fetches.
func (k *keySet) close() {
	k.mu.Lock()
	k.closed = true
	k.mu.Unlock()
}

// fetch discovers the provider (once) and loads its JWKS.
func (k *keySet) fetch() error {
	ctx, cancel := context.WithTimeout(context.Background(), k.timeout)
	defer cancel()
	if k.tracer != nil {
		// Shared by every caller waiting for it: a trace of its own.
		var span trace.Span
		ctx, span = k.tracer.Start(ctx, "idp.jwks.fetch", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(AttrIssuer.String(k.issuer)))
		defer func() {
			if s := k.snap.Load(); s != nil {
				span.SetAttributes(attribute.Int("idp.jwks.keys", len(s.all)), attribute.Int64("idp.jwks.generation", int64(s.gen)))
			}
			span.End()
		}()
	}
	err := k.fetchCtx(ctx)
	defer k.firstOnce.Do(func() { close(k.firstDone) })
	if err != nil {
		trace.SpanFromContext(ctx).SetStatus(codes.Error, "key set fetch failed")
		k.failures.Add(1)
		k.unreachable.Store(true)
		k.lastErr.Store(&err)
		k.log.Warn("idp: key set refresh failed", "error", err)
		return err
	}
	k.unreachable.Store(false)
	k.lastErr.Store(nil)
	k.refreshes.Add(1)
	k.lastRefresh.Store(time.Now().UnixNano())
	return nil
}

func (k *keySet) fetchCtx(ctx context.Context) error {
	meta := k.meta.Load()
	if meta == nil {
		m, err := discover(ctx, k.client, k.issuer, k.keycloak)
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
	// The store first: a caller that finds the new snapshot finds its
	// keys in the store too.
	if err := k.store.KeyReplaceAll(ctx, s.jwks); err != nil {
		return fmt.Errorf("idp: jwks: %w", err)
	}
	k.snap.Store(s)
	if old != nil && old.gen != s.gen {
		k.mu.Lock()
		k.absent = nil // the new set may hold kids found absent before
		k.mu.Unlock()
	}
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
		UnknownKIDWaits: k.waitExpired.Load(),
	}
	if snap := k.snap.Load(); snap != nil {
		s.Ready = true
		s.Keys = len(snap.all)
	}
	if ns := k.lastRefresh.Load(); ns != 0 {
		s.LastRefresh = time.Unix(0, ns)
	}
	if err := k.lastErr.Load(); err != nil {
		s.LastError = *err
	}
	return s
}
