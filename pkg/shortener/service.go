package shortener

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Options configure a Service. The zero value is usable: every field has
// the default given in brackets. How requests reach the Service (routes,
// identity, the page) is configured separately, by HandlerOptions.
type Options struct {
	// BaseURL prefixes short URLs: short_url = BaseURL + "/" + code. It
	// must be an absolute http(s) URL without query or fragment; a
	// trailing slash is ignored. ["": short URLs are relative, "/code"]
	//
	// The Host header of requests is never used: it is client-controlled.
	BaseURL string
	// CustomCodes lets creators choose their code (short_code: 3 to 64 of
	// [A-Za-z0-9_-], not reserved). It widens the codes GET /{code} looks
	// up: without it, anything but 6 to 16 base62 characters is a 404
	// without a store lookup, and links created with custom codes while it
	// was on stop resolving. [false]
	CustomCodes bool
	// VisitFlushInterval is how often the visits of links without
	// MaxVisits, counted in memory, are written to the store in one
	// batch. A crash loses at most the visits of one interval. [1s]
	VisitFlushInterval time.Duration
	// VisitStats keeps per-visit statistics (GET /links/{code}/stats):
	// for each redirect its time, the referrer's host, the device class,
	// the browser family, the country (with HandlerOptions.Country) and a
	// bot flag; never the IP address, the User-Agent, cookies or the
	// query string. They are aggregated in memory and written with the
	// visit counts, in one batch per VisitFlushInterval, so a crash loses
	// at most one interval. [false]
	VisitStats bool
	// VisitRetention is how long raw visits (hourly statistics) are kept;
	// their daily aggregates are kept as long as the link.
	// [DefaultVisitRetention: 30 days]
	VisitRetention time.Duration
	// Logger receives store failures and other server-side errors, of the
	// Service and of its Handler. [discard]
	Logger *slog.Logger
	// CodeLength is the length of new codes, between MinCodeLength and
	// MaxCodeLength. [DefaultCodeLength: 7]
	CodeLength int
	// Reserved lists words that can never be codes, in addition to
	// DefaultReserved (which always applies).
	Reserved []string
	// Rand is the source of randomness for codes. [crypto/rand.Reader]
	Rand io.Reader
	// Now returns the current time. [time.Now]
	Now func() time.Time
	// Cache keeps resolved links in an in-process cache of CacheSize
	// entries. Expiry is checked on every hit; links with MaxVisits are
	// never cached. With PostgreSQL the cache saves a database round trip
	// per redirect. A CacheSize above 0 turns it on too (as it did before
	// this switch). [false: every redirect reads the store]
	Cache bool
	// CacheSize bounds the cache, in entries (about 200 bytes each plus
	// the URL). [DefaultCacheSize: 100,000]
	CacheSize int
	// CacheTTL is how long a cached link is served without asking the
	// store again: the bound within which every replica serves an edit
	// (PATCH /links/{code}) or stops serving a deleted link made on
	// another replica, or in the store by hand. The replica that edits or
	// deletes a link serves the change at once. [5s]
	CacheTTL time.Duration
	// CacheStaleIfError is how long past CacheTTL a cached link is still
	// served while the store fails (down, frozen, refusing), so that an
	// outage of the store does not take down the links this replica has
	// just served; past it, such a redirect answers 503 like the others.
	// While this replica cannot reach the store, an edit or deletion made
	// on another one reaches it within CacheTTL + CacheStaleIfError.
	// Negative: stale links are never served. [DefaultCacheStaleIfError: 1m]
	CacheStaleIfError time.Duration
	// StoreTimeout bounds each call to the store: a store that does not
	// answer within it (frozen, or unreachable without a refusal) fails
	// the request with 503 "the link store is unavailable" and
	// Retry-After, instead of holding it. A create that times out may
	// still have been written; its code is not returned, so nobody learns
	// it. Once a call on one link (a lookup, a create, an edit, a visit of
	// a limited link) has run out of it, the store is taken as not
	// answering: one call at a time tries it (with this bound), the others
	// fail at once with ErrStoreUnresponsive, until a call ends within it.
	// Lists, statistics, deletions and batches may be slow with the store
	// well, and do not count. Negative: no bound but the request's own
	// context, and no such shortcut. [DefaultStoreTimeout: 5s]
	StoreTimeout time.Duration
	// TracerProvider records an OpenTelemetry client span for every
	// store call (store.Create, store.Get, store.Visit, ...), with the
	// operation's name and never a code, an owner or a URL. [nil: none]
	TracerProvider trace.TracerProvider
}

// DefaultVisitRetention is the default of Options.VisitRetention.
const DefaultVisitRetention = 30 * 24 * time.Hour

// DefaultCacheSize is the default of Options.CacheSize: 100,000 links,
// about 20 MB plus the URLs.
const DefaultCacheSize = 100_000

// DefaultCacheTTL is the default of Options.CacheTTL.
const DefaultCacheTTL = 5 * time.Second

// DefaultCacheStaleIfError is the default of Options.CacheStaleIfError:
// long enough to ride out a restart or a failover of PostgreSQL, short
// enough that a link taken down on another replica stops within a minute
// or so even when this one cannot reach the store.
const DefaultCacheStaleIfError = time.Minute

// Service issues and resolves short links on top of a Store: the domain,
// apart from HTTP (NewHandler serves it). It is safe for concurrent use.
// Create one with New; Close it to write the last visit counts.
type Service struct {
	store       Store
	baseURL     string
	customCodes bool
	log         *slog.Logger
	codeLen     int
	reserved    []string
	rand        io.Reader
	now         func() time.Time
	cache       *linkCache                                  // nil: no cache
	getRedirect func(context.Context, string) (Link, error) // Get, or the store's GetRedirect
	gate        *storeGate                                  // nil: no store timeout
	staleServed atomic.Int64
	visits      *visitBatcher
	retention   time.Duration
}

// New returns a Service that keeps its links in store. It returns an error
// when the options are invalid. The Service does not own store: the caller
// closes it, after closing the Service.
func New(store Store, o Options) (*Service, error) {
	if store == nil {
		return nil, errors.New("shortener: nil store")
	}
	s := &Service{
		store:       store,
		customCodes: o.CustomCodes,
		log:         o.Logger,
		codeLen:     o.CodeLength,
		rand:        o.Rand,
		now:         o.Now,
	}
	if o.BaseURL != "" {
		u, err := url.Parse(o.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("shortener: base URL %q must be an absolute http(s) URL without user-info, query or fragment", o.BaseURL)
		}
		s.baseURL = strings.TrimRight(o.BaseURL, "/")
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if o.StoreTimeout >= 0 {
		d := o.StoreTimeout
		if d == 0 {
			d = DefaultStoreTimeout
		}
		s.gate = newStoreGate(d, store.Ping, s.log)
		s.store = timeoutStore{s: store, d: d, gate: s.gate}
	}
	if o.TracerProvider != nil {
		s.store = newTracedStore(s.store, o.TracerProvider)
	}
	s.getRedirect = s.store.Get
	if _, ok := store.(RedirectGetter); ok {
		s.getRedirect = s.store.(RedirectGetter).GetRedirect // through the wrappers
	}
	if s.codeLen == 0 {
		s.codeLen = DefaultCodeLength
	}
	if s.codeLen < MinCodeLength || s.codeLen > MaxCodeLength {
		return nil, fmt.Errorf("shortener: code length %d out of range [%d, %d]", s.codeLen, MinCodeLength, MaxCodeLength)
	}
	s.reserved = append(append([]string(nil), DefaultReserved...), o.Reserved...)
	if s.rand == nil {
		s.rand = rand.Reader
	}
	if s.now == nil {
		s.now = time.Now
	}
	if o.CacheSize < 0 {
		return nil, fmt.Errorf("shortener: negative cache size %d", o.CacheSize)
	}
	if o.Cache || o.CacheSize > 0 {
		size := o.CacheSize
		if size == 0 {
			size = DefaultCacheSize
		}
		ttl := o.CacheTTL
		if ttl <= 0 {
			ttl = DefaultCacheTTL
		}
		stale := o.CacheStaleIfError
		switch {
		case stale == 0:
			stale = DefaultCacheStaleIfError
		case stale < 0:
			stale = 0
		}
		s.cache = newLinkCache(size, ttl, stale)
	}
	if o.VisitFlushInterval < 0 {
		return nil, fmt.Errorf("shortener: negative visit flush interval %v", o.VisitFlushInterval)
	}
	interval := o.VisitFlushInterval
	if interval == 0 {
		interval = time.Second
	}
	if o.VisitStats && o.VisitRetention < 0 {
		return nil, fmt.Errorf("shortener: negative visit retention %v", o.VisitRetention)
	}
	s.retention = o.VisitRetention
	if s.retention == 0 {
		s.retention = DefaultVisitRetention
	}
	s.visits = newVisitBatcher(s.store, interval, o.VisitStats, s.retention, s.now, s.log)
	return s, nil
}

// Close writes the visits still counted in memory to the store and stops
// the periodic flush. Call it before closing the store; the Service keeps
// serving afterwards, but later visits of unlimited links are no longer
// written.
func (s *Service) Close(ctx context.Context) error {
	return s.visits.close(ctx)
}

// Flush writes the visit counts and visit events held in memory to the
// store now, instead of at the next flush interval.
func (s *Service) Flush(ctx context.Context) error {
	return s.visits.flush(ctx)
}

// NewLink is what Create needs to make a link.
type NewLink struct {
	// URL is the target; see NormalizeURL. Required.
	URL string
	// Code is a custom code (Options.CustomCodes; see
	// ValidateCustomCode); "" draws a random one.
	Code string
	// ExpiresAt, when not zero, must be in the future; the link answers
	// 410 Gone from then on. Truncated to microseconds.
	ExpiresAt time.Time
	// MaxVisits, when not 0, is the number of redirects the link serves
	// (between 1 and MaxMaxVisits).
	MaxVisits int64
	// Owner is recorded as Link.CreatedBy; "" means unknown.
	Owner string
}

// MaxMaxVisits bounds Link.MaxVisits: the largest integer a JSON number
// carries exactly in every client (2^53 - 1).
const MaxMaxVisits = 1<<53 - 1

// Shorten validates rawURL and stores it (in ASCII, see NormalizeURL) under a new random code, recording
// owner as its creator. Invalid URLs give an error matching ErrInvalidURL;
// store failures are returned wrapped.
func (s *Service) Shorten(ctx context.Context, rawURL, owner string) (Link, error) {
	return s.Create(ctx, NewLink{URL: rawURL, Owner: owner})
}

// Create validates n and stores the link. Invalid URLs give an error
// matching ErrInvalidURL, other invalid fields an *InputError (matching
// ErrInvalidInput); a custom code that is taken gives an error matching
// ErrConflict (and ErrDuplicate); store failures are returned wrapped.
func (s *Service) Create(ctx context.Context, n NewLink) (Link, error) {
	rawURL, err := NormalizeURL(n.URL)
	if err != nil {
		return Link{}, err
	}
	now := s.now().UTC()
	l := Link{URL: rawURL, CreatedBy: n.Owner, CreatedAt: now.Truncate(time.Microsecond)}
	if !n.ExpiresAt.IsZero() {
		l.ExpiresAt = n.ExpiresAt.UTC().Truncate(time.Microsecond)
		if !l.ExpiresAt.After(now) {
			return Link{}, &InputError{Field: "expires_at", Reason: "must be in the future"}
		}
	}
	if n.MaxVisits < 0 || n.MaxVisits > MaxMaxVisits {
		return Link{}, &InputError{Field: "max_visits", Reason: "must be an integer from 1 to 9007199254740991"}
	}
	l.MaxVisits = n.MaxVisits
	if n.Code != "" {
		if !s.customCodes {
			return Link{}, &InputError{Field: "short_code", Reason: "custom short codes are not enabled on this service"}
		}
		if err := ValidateCustomCode(n.Code, s.reserved...); err != nil {
			return Link{}, err
		}
		l.Code = n.Code
		if err := s.store.Create(ctx, l); err != nil {
			if errors.Is(err, ErrDuplicate) {
				return Link{}, fmt.Errorf("%w: %w", ErrConflict, err)
			}
			return Link{}, fmt.Errorf("shortener: create link: %w", err)
		}
		s.forget(l.Code) // a link of this code deleted on another replica
		return l, nil
	}
	for length := s.codeLen; length <= MaxCodeLength; length++ {
		for range attemptsPerLength {
			code, err := randomCode(s.rand, length)
			if err != nil {
				return Link{}, err
			}
			if isReserved(code, s.reserved) {
				continue
			}
			l.Code = code
			err = s.store.Create(ctx, l)
			if err == nil {
				return l, nil
			}
			if !errors.Is(err, ErrDuplicate) {
				return Link{}, fmt.Errorf("shortener: create link: %w", err)
			}
		}
	}
	return Link{}, ErrCodeSpaceExhausted
}

// Resolve returns the link with the given code. Malformed codes (wrong
// alphabet or length, reserved words) give ErrNotFound without a store
// lookup.
func (s *Service) Resolve(ctx context.Context, code string) (Link, error) {
	if !s.ValidCode(code) {
		return Link{}, ErrNotFound
	}
	l, _, err := s.lookup(ctx, code, s.now(), false)
	return l, err
}

// lookup reads the link of a valid code from the cache, or from the store
// (caching what it finds). A stale cache entry (Options.CacheStaleIfError)
// is served when the store fails, and without asking it while it is known
// not to answer. now is the time of the lookup, read before it. For a
// redirect (redirect true), without the cache, the store may leave the
// Visits of a link without MaxVisits at 0 (see RedirectGetter). location
// is the cache's Location header value for the link (nil when the link
// does not come from the cache): shared, never to be changed.
func (s *Service) lookup(ctx context.Context, code string, now time.Time, redirect bool) (l Link, location []string, err error) {
	if s.cache == nil {
		if redirect {
			l, err = s.getRedirect(ctx, code)
		} else {
			l, err = s.store.Get(ctx, code)
		}
		return l, nil, err
	}
	cached, location, state := s.cache.get(code, now)
	if state == cacheFresh {
		return cached, location, nil
	}
	if state == cacheStale && s.gate != nil && s.gate.down() {
		s.gate.probeInBackground()
		s.staleServed.Add(1)
		return cached, location, nil
	}
	l, err = s.store.Get(ctx, code)
	if err != nil {
		// Not found is an answer: the link was deleted.
		if state == cacheStale && !errors.Is(err, ErrNotFound) {
			s.staleServed.Add(1)
			return cached, location, nil
		}
		return Link{}, nil, err
	}
	if !l.Limited() { // a limited link changes with every visit
		s.cache.put(l, now) // now is before the read began
	}
	return l, nil, nil
}

// StaleServed returns how many lookups were answered with a cached link
// past Options.CacheTTL because the store failed (see
// Options.CacheStaleIfError), since New.
func (s *Service) StaleServed() int64 { return s.staleServed.Load() }

// StoreAnswering reports whether the store is taken to answer: false from
// a call that ran out of Options.StoreTimeout until a call answers within
// it (meanwhile calls but one fail with ErrStoreUnresponsive). Always true
// with a negative StoreTimeout.
func (s *Service) StoreAnswering() bool { return s.gate == nil || !s.gate.down() }

// ValidCode reports whether code could have been issued by s: base62, of a
// length between the configured code length and MaxCodeLength, or, with
// Options.CustomCodes, 3 to 64 of [A-Za-z0-9_-]; and not a reserved word.
func (s *Service) ValidCode(code string) bool {
	if s.customCodes {
		return len(code) >= MinCustomCodeLength && len(code) <= MaxCustomCodeLength &&
			isCustomAlphabet(code) && !isReserved(code, s.reserved)
	}
	return len(code) >= s.codeLen && len(code) <= MaxCodeLength && isBase62(code) &&
		!isReserved(code, s.reserved)
}

// ShortURL returns the short URL of code.
func (s *Service) ShortURL(code string) string {
	return s.baseURL + "/" + code
}

// Ping checks the store.
func (s *Service) Ping(ctx context.Context) error {
	return s.store.Ping(ctx)
}
