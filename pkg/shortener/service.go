package shortener

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// Options configure a Service. The zero value is usable: every field has
// the default given in brackets.
type Options struct {
	// BaseURL prefixes short URLs: short_url = BaseURL + "/" + code. It
	// must be an absolute http(s) URL without query or fragment; a
	// trailing slash is ignored. ["": short URLs are relative, "/code"]
	//
	// The Host header of requests is never used: it is client-controlled.
	BaseURL string
	// Authenticate wraps the routes that need the caller's identity
	// (Route.Identity in Routes: POST /shorten): it answers 401/403 itself
	// or calls next with the identity in the request (for Owner to read).
	// With pkg/idp in-process: plugin.Require(guards...). The handler
	// applies it to the routes it marks, so renaming a route cannot lose
	// the protection. [nil: every route is served without one, as behind
	// idp-proxy, which judges requests before they arrive]
	Authenticate func(next http.Handler) http.Handler
	// Owner returns the identity of the caller of POST /shorten, recorded
	// as Link.CreatedBy; "" means unknown. [nil: no owner is recorded]
	//
	// Only use OwnerFromHeader when a trusted proxy in front of the service
	// sets (and strips client copies of) that header.
	Owner func(*http.Request) string
	// Logger receives store failures and other server-side errors.
	// [discard]
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
	// HealthTimeout bounds the store Ping of GET /health. [2s]
	HealthTimeout time.Duration
	// CacheSize bounds an in-process cache of resolved links, in entries
	// (about 200 bytes each plus the URL); 0 disables it. Links never
	// change once created, so cached redirects are exact; with PostgreSQL
	// the cache saves a database round trip per redirect. [0: no cache]
	CacheSize int
	// CacheTTL is how long a cached link is served without asking the
	// store again: a link deleted from the store by hand keeps resolving
	// for at most this long. [1m]
	CacheTTL time.Duration
}

// Service issues and resolves short links on top of a Store. It is safe for
// concurrent use. Create one with New.
type Service struct {
	store         Store
	baseURL       string
	owner         func(*http.Request) string
	authenticate  func(http.Handler) http.Handler
	log           *slog.Logger
	codeLen       int
	reserved      []string
	rand          io.Reader
	now           func() time.Time
	healthTimeout time.Duration
	cache         *linkCache // nil: no cache
}

// New returns a Service that keeps its links in store. It returns an error
// when the options are invalid. The Service does not own store: the caller
// closes it.
func New(store Store, o Options) (*Service, error) {
	if store == nil {
		return nil, errors.New("shortener: nil store")
	}
	s := &Service{
		store:         store,
		owner:         o.Owner,
		authenticate:  o.Authenticate,
		log:           o.Logger,
		codeLen:       o.CodeLength,
		rand:          o.Rand,
		now:           o.Now,
		healthTimeout: o.HealthTimeout,
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
	if s.healthTimeout <= 0 {
		s.healthTimeout = 2 * time.Second
	}
	if o.CacheSize < 0 {
		return nil, fmt.Errorf("shortener: negative cache size %d", o.CacheSize)
	}
	if o.CacheSize > 0 {
		ttl := o.CacheTTL
		if ttl <= 0 {
			ttl = time.Minute
		}
		s.cache = newLinkCache(o.CacheSize, ttl, s.now)
	}
	return s, nil
}

// Shorten validates rawURL and stores it (in ASCII, see NormalizeURL) under a new random code, recording
// owner as its creator. Invalid URLs give an error matching ErrInvalidURL;
// store failures are returned wrapped.
func (s *Service) Shorten(ctx context.Context, rawURL, owner string) (Link, error) {
	rawURL, err := NormalizeURL(rawURL)
	if err != nil {
		return Link{}, err
	}
	l := Link{URL: rawURL, CreatedBy: owner, CreatedAt: s.now().UTC().Truncate(time.Microsecond)}
	for n := s.codeLen; n <= MaxCodeLength; n++ {
		for range attemptsPerLength {
			code, err := randomCode(s.rand, n)
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
	return s.lookup(ctx, code)
}

// lookup reads the link of a valid code from the cache, or from the store
// (caching what it finds).
func (s *Service) lookup(ctx context.Context, code string) (Link, error) {
	if s.cache == nil {
		return s.store.Get(ctx, code)
	}
	if l, ok := s.cache.get(code); ok {
		return l, nil
	}
	l, err := s.store.Get(ctx, code)
	if err != nil {
		return Link{}, err
	}
	s.cache.put(l)
	return l, nil
}

// ValidCode reports whether code could have been issued by s: base62, of a
// length between the configured code length and MaxCodeLength, and not a
// reserved word.
func (s *Service) ValidCode(code string) bool {
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

// maxOwnerLength bounds identities read from headers.
const maxOwnerLength = 256

// OwnerFromHeader returns an Options.Owner hook that reads the identity from
// the request header name (e.g. "X-Auth-Request-User", set by idp-proxy).
//
// Security: any client can send that header. Use this only when every
// request reaches the service through a proxy that strips client copies of
// the header and sets it from a verified token. Values longer than 256
// bytes, not valid UTF-8 or holding control characters are ignored
// (recorded as no owner).
func OwnerFromHeader(name string) func(*http.Request) string {
	key := http.CanonicalHeaderKey(name)
	return func(r *http.Request) string {
		vs := r.Header[key]
		if len(vs) != 1 { // absent, or ambiguous
			return ""
		}
		v := strings.TrimSpace(vs[0])
		if len(v) > maxOwnerLength || !utf8.ValidString(v) {
			return ""
		}
		for _, c := range v {
			if c < ' ' || c == 0x7f || (c >= 0x80 && c < 0xa0) {
				return ""
			}
		}
		return v
	}
}
