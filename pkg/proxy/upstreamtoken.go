package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"

	"github.com/idp-proxy/idp-proxy/internal/directmap"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/exchange"
)

// Credential modes whose upstream gets a token from the identity
// provider (UpstreamConfig.Credential).
const (
	// CredentialExchange sends a token the provider issues for the
	// upstream's audience and scopes in exchange for the caller's (RFC
	// 8693 token exchange), as Authorization: Bearer.
	CredentialExchange = "exchange"
	// CredentialClientCredentials sends the proxy's own token for the
	// upstream's audience and scopes (the client_credentials grant), as
	// Authorization: Bearer; the caller's identity goes in the assertion
	// (when assertion.issuer_url and assertion.key_file are set) and the
	// identity headers.
	CredentialClientCredentials = "client_credentials"
)

// upstreamTokenMargin: a token is fetched again this long before it
// expires (at most a quarter of its life).
const upstreamTokenMargin = exchange.DefaultMargin

// tokenSource is what an exchange or client_credentials upstream gets
// its token from.
type tokenSource interface {
	// token returns the Authorization value for a request of id (nil: no
	// verified caller), nil for none.
	token(ctx context.Context, id *idp.Identity) (*upstreamToken, error)
}

// upstreamToken is the Authorization header an upstream gets: one
// value, shared by the requests that reuse it.
type upstreamToken struct {
	value   []string // "Bearer <token>"; capacity 1
	renew   time.Time
	payload *idp.TokenPayload // the caller's, for the hot table
}

func newUpstreamToken(tok *oauth2.Token, payload *idp.TokenPayload, now time.Time) *upstreamToken {
	u := &upstreamToken{value: []string{"Bearer " + tok.AccessToken}, payload: payload}
	if !tok.Expiry.IsZero() {
		u.renew = tok.Expiry.Add(-min(upstreamTokenMargin, tok.Expiry.Sub(now)/4))
	}
	return u
}

// exchangeSource exchanges the caller's token for the upstream's target.
// A direct-mapped table keyed by the caller's *idp.TokenPayload (the
// plugin hands the same payload to the requests of a repeated token)
// answers first, without hashing the token; the Exchanger's cache (and
// its one exchange in flight per key) answers the rest.
type exchangeSource struct {
	ex     *exchange.Exchanger
	target exchange.Target
	hot    directmap.Table[upstreamToken]
	// gen counts the logouts: a token exchanged across one is not put
	// in the hot table.
	gen atomic.Uint64
	// waiting is called when a request misses the hot table (tests).
	waiting func()
}

const exchangeHotSlots = 256

func (s *exchangeSource) token(ctx context.Context, id *idp.Identity) (*upstreamToken, error) {
	if id == nil || id.Raw == "" {
		return nil, nil // nothing to exchange: the upstream gets no token
	}
	now := time.Now()
	slot := directmap.Comparable(&s.hot, id.Payload)
	if e := slot.Load(); e != nil && e.payload == id.Payload && now.Before(e.renew) {
		return e, nil
	}
	gen := s.gen.Load()
	if s.waiting != nil {
		s.waiting()
	}
	tok, err := s.ex.Exchange(ctx, exchange.SubjectOf(id), s.target)
	if err != nil {
		return nil, err
	}
	u := newUpstreamToken(tok, id.Payload, now)
	if !u.renew.IsZero() && s.gen.Load() == gen {
		slot.Store(u)
	}
	return u, nil
}

// ccSource is the proxy's own token for the upstream's target, the same
// for every request.
type ccSource struct {
	cc  *exchange.ClientCredentials
	cur atomic.Pointer[upstreamToken]
	tok atomic.Pointer[oauth2.Token]
}

func (s *ccSource) token(ctx context.Context, _ *idp.Identity) (*upstreamToken, error) {
	tok, err := s.cc.TokenContext(ctx)
	if err != nil {
		return nil, err
	}
	if s.tok.Load() == tok {
		return s.cur.Load(), nil
	}
	u := newUpstreamToken(tok, nil, time.Now())
	s.cur.Store(u)
	s.tok.Store(tok)
	return u, nil
}

// upstreamTokenKey carries the request's *upstreamToken from serve to
// rewrite.
type upstreamTokenKey struct{}

// setUpstreamToken puts the upstream token serve got into hdr.
func setUpstreamToken(hdr http.Header, ctx context.Context) {
	if u, _ := ctx.Value(upstreamTokenKey{}).(*upstreamToken); u != nil {
		hdr["Authorization"] = u.value[:1:1] // shared: an append copies
	}
}

// withUpstreamToken gets the token of c for the request of id and returns
// ctx carrying it; when the provider refuses or fails it answers the
// request itself (403 naming the upstream and the provider's error code;
// 503 with Retry-After naming the provider) and returns false.
func (p *Proxy) withUpstreamToken(ctx context.Context, w http.ResponseWriter, r *http.Request, c *credential, id *idp.Identity) (context.Context, int, bool) {
	u, err := c.tokens.token(ctx, id)
	if err == nil {
		if u == nil {
			return ctx, 0, true
		}
		return context.WithValue(ctx, upstreamTokenKey{}, u), 0, true
	}
	w, done := asGRPC(w, r)
	defer done()
	rid := r.Header.Get("X-Request-Id")
	var re *oauth2.RetrieveError
	var ue *exchange.UnavailableError
	unavail := errors.Is(err, exchange.ErrUnavailable) // may wrap a RetrieveError (a 5xx)
	switch {
	case unavail:
	case errors.As(err, &re) && c.mode == CredentialExchange:
		p.log.Info("the identity provider refused a token exchange", "request_id", rid, "upstream", c.name, "error_code", re.ErrorCode, "error_description", re.ErrorDescription)
		p.plugin.WriteProblem(w, r, http.StatusForbidden,
			fmt.Sprintf("the identity provider refused to exchange the caller's token for upstream %s: %s", c.name, re.ErrorCode))
		return ctx, http.StatusForbidden, false
	case errors.As(err, &re):
		// The proxy's own credentials: a configuration error, not the
		// caller's; an outage for the caller.
		p.log.Error("the identity provider refused the proxy's client credentials; check idp.client_id, idp.client_secret and the client's service account",
			"request_id", rid, "upstream", c.name, "error_code", re.ErrorCode, "error_description", re.ErrorDescription)
		w.Header().Set("Retry-After", strconv.Itoa(int(exchange.DefaultRetryAfter/time.Second)))
		p.plugin.WriteProblem(w, r, http.StatusServiceUnavailable,
			fmt.Sprintf("the identity provider %s refused the proxy's client credentials for upstream %s: %s", p.plugin.Issuer(), c.name, re.ErrorCode))
		return ctx, http.StatusServiceUnavailable, false
	case r.Context().Err() != nil:
		p.log.Debug("client gone while the upstream's token was fetched", "request_id", rid, "upstream", c.name)
		w.Header().Set("Retry-After", "1")
		p.plugin.WriteProblem(w, r, http.StatusServiceUnavailable, "the request ended before the upstream's token arrived")
		return ctx, http.StatusServiceUnavailable, false
	}
	ra := exchange.DefaultRetryAfter
	if errors.As(err, &ue) {
		ra = ue.RetryAfter
	}
	p.log.Warn("the identity provider's token endpoint is unavailable", "request_id", rid, "upstream", c.name, "mode", c.mode, "error", err)
	w.Header().Set("Retry-After", strconv.Itoa(int((ra+time.Second-1)/time.Second)))
	p.plugin.WriteProblem(w, r, http.StatusServiceUnavailable,
		fmt.Sprintf("the identity provider %s is unavailable: no token for upstream %s", p.plugin.Issuer(), c.name))
	return ctx, http.StatusServiceUnavailable, false
}

// newTokenSource makes the token source of an exchange or
// client_credentials upstream.
func (p *Proxy) newTokenSource(mode, audience string, scopes []string) (tokenSource, error) {
	ic := p.plugin.Config()
	hc := &http.Client{Timeout: ic.HTTPTimeout}
	if ic.HTTPClient != nil {
		hc.Transport = ic.HTTPClient.Transport
	}
	target := exchange.Target{Audience: audience, Scopes: scopes}
	if mode == CredentialExchange {
		if p.exchanger == nil {
			ex, err := exchange.New(exchange.Options{Issuer: p.plugin.Issuer(), ClientID: ic.ClientID,
				ClientSecret: ic.ClientSecret, HTTPClient: hc})
			if err != nil {
				return nil, err
			}
			p.exchanger = ex
		}
		return &exchangeSource{ex: p.exchanger, target: target, hot: directmap.Make[upstreamToken](exchangeHotSlots)}, nil
	}
	cc, err := exchange.NewClientCredentials(exchange.ClientCredentialsOptions{Issuer: p.plugin.Issuer(),
		ClientID: ic.ClientID, ClientSecret: ic.ClientSecret, Scopes: scopes, Audience: audience, HTTPClient: hc})
	if err != nil {
		return nil, err
	}
	return &ccSource{cc: cc}, nil
}

// SessionEnded forgets the tokens exchanged for the caller tokens of
// provider session sid, or of every session of sub when sid is "" (see
// idp.Config.SessionEnded: the back-channel logouts and sign-outs the
// plugin carries out).
func (p *Proxy) SessionEnded(sid, sub string) {
	if p.exchanger == nil {
		return
	}
	if sid != "" {
		p.exchanger.DropSession(sid)
	} else {
		p.exchanger.DropSubject(sub)
	}
	for _, c := range p.credentials() {
		if s, ok := c.tokens.(*exchangeSource); ok {
			s.gen.Add(1)
			s.hot.Reset()
		}
	}
}

// credentials lists the upstreams' credentials that get tokens.
func (p *Proxy) credentials() []*credential {
	var out []*credential
	add := func(h *headerRules) {
		if h != nil && h.cred != nil && h.cred.tokens != nil {
			out = append(out, h.cred)
		}
	}
	if p.ups == nil {
		add(p.headers)
		return out
	}
	for _, up := range p.ups.all {
		add(up.headers)
	}
	return out
}
