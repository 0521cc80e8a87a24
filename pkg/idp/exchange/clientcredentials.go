package exchange

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/sync/singleflight"
)

// ClientCredentialsOptions configure ClientCredentials. Zero values take
// the defaults in brackets.
type ClientCredentialsOptions struct {
	// TokenURL or Issuer: as in Options. One of the two is required.
	TokenURL, Issuer string
	// ClientID and ClientSecret: the client whose service account the
	// token is for. Required.
	ClientID, ClientSecret string
	// AuthStyle: as Options.AuthStyle. [client_secret_basic]
	AuthStyle oauth2.AuthStyle
	// Scopes are the scope parameter's values. [none]
	Scopes []string
	// Audience is sent as the audience parameter (Auth0, Okta and others
	// read it; Keycloak ignores it: give its client an audience mapper
	// instead). ["": none]
	Audience string
	// HTTPClient, Margin and Now: as in Options.
	HTTPClient *http.Client
	Margin     time.Duration
	Now        func() time.Time
}

// ClientCredentials is a client's own token (RFC 6749 §4.4), kept until
// Margin before it expires (at most a quarter of its life), then fetched
// again by the first caller while the others wait for that one request.
// It is an oauth2.TokenSource, safe for concurrent use.
type ClientCredentials struct {
	ep     *endpoint
	conf   clientcredentials.Config
	client *http.Client
	margin time.Duration
	now    func() time.Time
	flight singleflight.Group

	mu    sync.Mutex
	tok   *oauth2.Token
	renew time.Time

	fetches atomic.Uint64
	waiting func() // tests: called when a call misses the cache
}

// NewClientCredentials returns the token source of o.
func NewClientCredentials(o ClientCredentialsOptions) (*ClientCredentials, error) {
	if err := clientDefaults(o.ClientID, o.ClientSecret, &o.AuthStyle, &o.HTTPClient, &o.Margin, &o.Now); err != nil {
		return nil, err
	}
	ep, err := newEndpoint(o.TokenURL, o.Issuer, o.HTTPClient)
	if err != nil {
		return nil, err
	}
	c := &ClientCredentials{ep: ep, client: o.HTTPClient, margin: o.Margin, now: o.Now,
		conf: clientcredentials.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret,
			Scopes: o.Scopes, AuthStyle: o.AuthStyle}}
	if o.Audience != "" {
		c.conf.EndpointParams = url.Values{"audience": {o.Audience}}
	}
	return c, nil
}

// Token returns the cached token, or fetches one.
func (c *ClientCredentials) Token() (*oauth2.Token, error) {
	return c.TokenContext(context.Background())
}

// TokenContext is Token with ctx bounding this caller's wait (not the
// fetch the others wait for).
func (c *ClientCredentials) TokenContext(ctx context.Context) (*oauth2.Token, error) {
	if tok := c.cached(); tok != nil {
		return tok, nil
	}
	if c.waiting != nil {
		c.waiting()
	}
	ch := c.flight.DoChan("", func() (any, error) {
		if tok := c.cached(); tok != nil {
			return tok, nil
		}
		fctx := context.WithValue(context.WithoutCancel(ctx), oauth2.HTTPClient, c.client)
		tokenURL, err := c.ep.get(fctx)
		if err != nil {
			return nil, err
		}
		conf := c.conf
		conf.TokenURL = tokenURL
		tok, err := conf.Token(fctx)
		if err != nil {
			return nil, classify(err)
		}
		if !tokenTypeBearer(tok.TokenType) {
			return nil, unavailable(nil, errBadTokenType(tok.TokenType))
		}
		c.fetches.Add(1)
		now := c.now()
		// The oauth2 package dates Expiry by the wall clock: date it by
		// this one, from expires_in.
		tok.Expiry = time.Time{}
		if in := expiresIn(tok); in > 0 {
			tok.Expiry, tok.ExpiresIn = now.Add(time.Duration(in)*time.Second), in
		}
		c.mu.Lock()
		c.tok, c.renew = tok, renewAt(tok.Expiry, now, c.margin)
		c.mu.Unlock()
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

// cached is the token while it is good; one without expires_in is kept
// until Forget.
func (c *ClientCredentials) cached() *oauth2.Token {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tok != nil && (c.renew.IsZero() || c.now().Before(c.renew)) {
		return c.tok
	}
	return nil
}

// expiresIn is the expires_in of tok's response, 0 when absent or bad.
func expiresIn(tok *oauth2.Token) int64 {
	var s string
	switch v := tok.Extra("expires_in").(type) {
	case float64:
		if v > 0 && v < 1<<31 {
			return int64(v)
		}
		return 0
	case string:
		s = v
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > 1<<31 {
		return 0
	}
	return n
}

// Forget drops the cached token: the next Token fetches one (after the
// upstream refused it, say).
func (c *ClientCredentials) Forget() {
	c.mu.Lock()
	c.tok = nil
	c.mu.Unlock()
}

// Fetches counts the tokens fetched from the provider.
func (c *ClientCredentials) Fetches() uint64 { return c.fetches.Load() }

// classify turns the oauth2 package's errors into this package's: a 4xx
// refusal stays an *oauth2.RetrieveError, the rest is an outage.
func classify(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.Response != nil {
		s := re.Response.StatusCode
		if s >= 400 && s < 500 && s != http.StatusRequestTimeout && s != http.StatusTooManyRequests && re.ErrorCode != "" {
			return re
		}
		return unavailable(re.Response, err)
	}
	return unavailable(nil, err)
}

// tokenTypeBearer: the token is sent as a Bearer token (RFC 6749 §7.1,
// the type's name is case-insensitive).
func tokenTypeBearer(t string) bool { return strings.EqualFold(t, "Bearer") }

type errBadTokenType string

func (e errBadTokenType) Error() string {
	return "unusable token response: token_type " + string(e) + ", want Bearer"
}
