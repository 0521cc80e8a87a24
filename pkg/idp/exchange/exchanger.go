package exchange

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// RFC 8693 §2.1 and §3 identifiers.
const (
	// GrantType is the token exchange grant (RFC 8693 §2.1).
	GrantType = "urn:ietf:params:oauth:grant-type:token-exchange"
	// TokenTypeAccessToken is the token type of OAuth access tokens
	// (RFC 8693 §3): the subject token's and the requested token's.
	TokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
)

// Defaults of Options.
const (
	DefaultMargin      = 30 * time.Second
	DefaultCacheSize   = 10000
	DefaultHTTPTimeout = 10 * time.Second
)

// Options configure an Exchanger. Zero values take the defaults in
// brackets.
type Options struct {
	// TokenURL is the provider's token endpoint. [discovered from
	// Issuer]
	TokenURL string
	// Issuer is the provider's issuer URL; its discovery document gives
	// the token endpoint when TokenURL is empty (fetched at the first
	// exchange, again after a failure). One of the two is required.
	Issuer string
	// ClientID and ClientSecret authenticate the exchanging client: token
	// exchange is for confidential clients (Keycloak refuses public
	// ones). Required.
	ClientID, ClientSecret string
	// AuthStyle is how the client authenticates: oauth2.AuthStyleInHeader
	// (client_secret_basic) or oauth2.AuthStyleInParams
	// (client_secret_post). [client_secret_basic]
	AuthStyle oauth2.AuthStyle
	// HTTPClient sends the requests. [a client with a 10 s timeout]
	HTTPClient *http.Client
	// Margin is how long before the earlier of the subject token's and the
	// exchanged token's expiry the exchanged token is exchanged again;
	// never more than a quarter of its remaining life. [30s]
	Margin time.Duration
	// CacheSize bounds the exchanged tokens kept; negative keeps none
	// (every call exchanges; concurrent calls for one key still share
	// one exchange). [10000]
	CacheSize int
	// Now is the clock of the cache. [time.Now]
	Now func() time.Time
}

// Target is what the exchanged token is for.
type Target struct {
	// Audience is the RFC 8693 audience parameter: with Keycloak, the
	// client ID of the service the token is for. "" sends none (the
	// provider chooses).
	Audience string
	// Scopes are the scope parameter's values. [none: the provider's
	// default scopes]
	Scopes []string
}

// key is t's part of a cache key: the scopes sorted, so that their order
// does not matter.
func (t Target) key() string {
	s := slices.Clone(t.Scopes)
	slices.Sort(s)
	return t.Audience + "\x00" + strings.Join(slices.Compact(s), " ")
}

// Subject is the caller's token to exchange and what the cache needs to
// know of it.
type Subject struct {
	// Token is the caller's access token. Required.
	Token string
	// Expiry is its exp; an exchanged token is not reused past it. Zero:
	// unknown (the exchanged token's own expiry alone bounds the cache).
	Expiry time.Time
	// SessionID and Sub are its sid and sub, by which DropSession and
	// DropSubject find its exchanged tokens. [none]
	SessionID, Sub string
}

// SubjectOf is the subject of a verified identity (idp.IdentityFrom).
func SubjectOf(id *idp.Identity) Subject {
	s := Subject{Token: id.Raw}
	if p := id.Payload; p != nil {
		s.Expiry, s.SessionID, s.Sub = p.ExpiresAt, p.SessionID, p.Subject
		if s.SessionID == "" {
			s.SessionID = p.SessionState // Keycloak before 18
		}
	}
	return s
}

// Exchanger exchanges callers' tokens at one token endpoint as one
// client. It is safe for concurrent use.
type Exchanger struct {
	o      Options
	ep     *endpoint
	cache  *cache
	flight singleflight.Group

	exchanges atomic.Uint64
	waiting   func() // tests: called when a call misses the cache
}

// ErrOptions matches New's errors.
var ErrOptions = errors.New("exchange: invalid options")

// New returns an Exchanger.
func New(o Options) (*Exchanger, error) {
	if err := clientDefaults(o.ClientID, o.ClientSecret, &o.AuthStyle, &o.HTTPClient, &o.Margin, &o.Now); err != nil {
		return nil, err
	}
	ep, err := newEndpoint(o.TokenURL, o.Issuer, o.HTTPClient)
	if err != nil {
		return nil, err
	}
	if o.CacheSize == 0 {
		o.CacheSize = DefaultCacheSize
	}
	return &Exchanger{o: o, ep: ep, cache: newCache(o.CacheSize)}, nil
}

// clientDefaults checks the confidential client and fills the defaults
// the exchange and the client-credentials source share:
// client_secret_basic, an HTTP client bounded by DefaultHTTPTimeout,
// DefaultMargin and time.Now.
func clientDefaults(id, secret string, style *oauth2.AuthStyle, hc **http.Client, margin *time.Duration, now *func() time.Time) error {
	if err := checkClient(id, secret); err != nil {
		return err
	}
	if *style == oauth2.AuthStyleAutoDetect {
		*style = oauth2.AuthStyleInHeader
	}
	if *hc == nil {
		*hc = &http.Client{Timeout: DefaultHTTPTimeout}
	}
	if *margin == 0 {
		*margin = DefaultMargin
	}
	if *now == nil {
		*now = time.Now
	}
	return nil
}

// checkClient reports a client without an ID or a secret.
func checkClient(id, secret string) error {
	switch {
	case id == "":
		return errorsJoin(ErrOptions, "ClientID is required")
	case secret == "":
		return errorsJoin(ErrOptions, "ClientSecret is required: only a confidential client may exchange tokens or get its own")
	}
	return nil
}

// Exchange returns a token for t in exchange for s: the cached one while
// it is good, else one from the provider. Concurrent calls for one
// (subject token, target) share one exchange; ctx bounds this caller's
// wait, not the exchange the others wait for.
func (e *Exchanger) Exchange(ctx context.Context, s Subject, t Target) (*oauth2.Token, error) {
	if s.Token == "" {
		return nil, errorsJoin(ErrOptions, "no subject token")
	}
	return e.exchange(ctx, s, t, t.key())
}

func (e *Exchanger) exchange(ctx context.Context, s Subject, t Target, tkey string) (*oauth2.Token, error) {
	h := sha256.Sum256([]byte(s.Token))
	key := string(h[:]) + tkey
	if tok := e.cache.get(key, e.o.Now()); tok != nil {
		return tok, nil
	}
	// A drop (logout) after this point keeps the result out of the cache.
	gen := e.cache.generation()
	if e.waiting != nil {
		e.waiting()
	}
	ch := e.flight.DoChan(key, func() (any, error) {
		if tok := e.cache.get(key, e.o.Now()); tok != nil {
			return tok, nil // stored by a flight that just ended
		}
		// The exchange outlives a caller that goes away: the others wait
		// for it. HTTPClient's timeout bounds it.
		tok, err := e.post(context.WithoutCancel(ctx), s.Token, t)
		if err != nil {
			return nil, err
		}
		e.exchanges.Add(1)
		exp := earlier(tok.Expiry, s.Expiry)
		if tok.Expiry.IsZero() {
			tok.Expiry = exp
		}
		now := e.o.Now()
		e.cache.put(key, tok, now, renewAt(exp, now, e.o.Margin), s.SessionID, s.Sub, gen)
		return tok, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*oauth2.Token), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// renewAt is when a token good until exp is fetched again (zero: never
// cached): margin before, at most a quarter of its life left at now.
func renewAt(exp, now time.Time, margin time.Duration) time.Time {
	if exp.IsZero() {
		return time.Time{}
	}
	return exp.Add(-min(margin, exp.Sub(now)/4))
}

// earlier is the earlier of two expiries, zero meaning none.
func earlier(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

// DropSession forgets the exchanged tokens of the subject tokens of
// provider session sid (back-channel logout, sign-out) and returns how
// many it dropped; exchanges in flight are not cached.
func (e *Exchanger) DropSession(sid string) int {
	if sid == "" {
		return 0
	}
	return e.cache.drop(func(en *entry) bool { return en.sid == sid })
}

// DropSubject forgets the exchanged tokens of every subject token of
// sub, as DropSession.
func (e *Exchanger) DropSubject(sub string) int {
	if sub == "" {
		return 0
	}
	return e.cache.drop(func(en *entry) bool { return en.sub == sub })
}

// Exchanges counts the successful exchanges made at the provider.
func (e *Exchanger) Exchanges() uint64 { return e.exchanges.Load() }

// TokenSource is an oauth2.TokenSource of the tokens exchanged for s and
// t; its Token uses ctx.
func (e *Exchanger) TokenSource(ctx context.Context, s Subject, t Target) oauth2.TokenSource {
	return &source{e: e, ctx: ctx, s: s, t: t, tkey: t.key()}
}

// FromRequest is TokenSource for the verified identity of r (the context
// of a request pkg/idp's middleware let through); its Token fails with
// ErrNoIdentity when r has none.
func (e *Exchanger) FromRequest(r *http.Request, t Target) oauth2.TokenSource {
	id, ok := idp.IdentityFrom(r.Context())
	if !ok || id.Raw == "" {
		return errSource{}
	}
	return e.TokenSource(r.Context(), SubjectOf(id), t)
}

// ErrNoIdentity: FromRequest's request carried no verified identity.
var ErrNoIdentity = errors.New("exchange: the request has no verified identity")

type errSource struct{}

func (errSource) Token() (*oauth2.Token, error) { return nil, ErrNoIdentity }

type source struct {
	e    *Exchanger
	ctx  context.Context
	s    Subject
	t    Target
	tkey string
}

func (s *source) Token() (*oauth2.Token, error) { return s.e.exchange(s.ctx, s.s, s.t, s.tkey) }
