package exchange

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// clock is a test clock shared by the provider and the exchanger.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now().Truncate(time.Second)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// setup is a provider with the exchanging client "proxy", the target
// "orders-api" and a service-account client "robot", and an exchanger.
type setup struct {
	srv *idptest.Server
	clk *clock
	ex  *Exchanger
}

func newSetup(t testing.TB, edit ...func(*Options)) *setup {
	t.Helper()
	clk := newClock()
	srv := idptest.NewServer(t, idptest.Options{Now: clk.Now, Clients: []idptest.Client{
		{ID: "proxy", Secret: "proxy-secret", StandardTokenExchange: true},
		{ID: "orders-api", Secret: "orders-secret"},
		{ID: "robot", Secret: "robot-secret", ServiceAccount: true},
	}})
	o := Options{TokenURL: srv.TokenURL(), ClientID: "proxy", ClientSecret: "proxy-secret", Now: clk.Now}
	for _, e := range edit {
		e(&o)
	}
	ex, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return &setup{srv: srv, clk: clk, ex: ex}
}

// subject mints alice's token with the proxy in its aud.
func (s *setup) subject(user string, edit ...func(map[string]any)) Subject {
	c := s.srv.UserClaims("web", user, "creator")
	c["aud"] = []any{"proxy", "account"}
	c["exp"] = s.clk.Now().Add(10 * time.Minute).Unix()
	for _, e := range edit {
		e(c)
	}
	return Subject{Token: s.srv.Mint(c), Expiry: time.Unix(c["exp"].(int64), 0), SessionID: c["sid"].(string), Sub: c["sub"].(string)}
}

var orders = Target{Audience: "orders-api", Scopes: []string{"openid", "orders"}}

func TestExchange(t *testing.T) {
	s := newSetup(t)
	sub := s.subject("alice")
	tok, err := s.ex.Exchange(context.Background(), sub, orders)
	if err != nil {
		t.Fatal(err)
	}
	if tok.AccessToken == sub.Token || tok.TokenType != "Bearer" || tok.Extra("issued_token_type") != TokenTypeAccessToken {
		t.Fatalf("token %+v", tok)
	}
	if got := tok.Expiry.Sub(s.clk.Now()); got != 5*time.Minute {
		t.Errorf("expiry in %s, want the provider's 5m", got)
	}
}

// TestExchange_RFC8693_2_1_SubjectTokenTypeSent: subject_token and
// subject_token_type are REQUIRED (§2.1); the provider refuses a request
// without them (invalid_request), so an exchange that succeeds sent them.
// The requested_token_type sent is the access token type (a provider
// answering another type is refused: see _2_2_1_IssuedTokenTypeChecked).
func TestExchange_RFC8693_2_1_SubjectTokenTypeSent(t *testing.T) {
	s := newSetup(t)
	if _, err := s.ex.Exchange(context.Background(), s.subject("alice"), orders); err != nil {
		t.Fatalf("the provider refused the request: %v", err)
	}
	if s.srv.Exchanges() != 1 {
		t.Errorf("%d exchanges, want 1", s.srv.Exchanges())
	}
}

// TestExchange_RFC8693_2_1_ClientAuthentication: the client
// authenticates (§2.1, RFC 6749 §2.3.1) with client_secret_basic or
// client_secret_post; a wrong secret is refused with invalid_client.
func TestExchange_RFC8693_2_1_ClientAuthentication(t *testing.T) {
	for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInHeader, oauth2.AuthStyleInParams} {
		s := newSetup(t, func(o *Options) { o.AuthStyle = style })
		if _, err := s.ex.Exchange(context.Background(), s.subject("alice"), orders); err != nil {
			t.Errorf("style %d: %v", style, err)
		}
	}
	s := newSetup(t, func(o *Options) { o.ClientSecret = "wrong" })
	_, err := s.ex.Exchange(context.Background(), s.subject("alice"), orders)
	if re := refusalOf(t, err); re.ErrorCode != "invalid_client" {
		t.Errorf("code %q", re.ErrorCode)
	}
}

func refusalOf(t *testing.T, err error) *oauth2.RetrieveError {
	t.Helper()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T), want a refusal", err, err)
	}
	if errors.Is(err, ErrUnavailable) {
		t.Fatalf("a refusal matches ErrUnavailable")
	}
	return re
}

// TestExchange_RFC8693_2_2_1_IssuedTokenTypeChecked: issued_token_type is
// REQUIRED in the response (§2.2.1); the client asked for an access token
// and sends the result as one, so any other type, or none, is refused.
func TestExchange_RFC8693_2_2_1_IssuedTokenTypeChecked(t *testing.T) {
	for _, v := range []any{"urn:ietf:params:oauth:token-type:refresh_token", nil, ""} {
		s := newSetup(t)
		s.srv.SetExchangeResponse(func(doc map[string]any) {
			if v == nil {
				delete(doc, "issued_token_type")
			} else {
				doc["issued_token_type"] = v
			}
		})
		if _, err := s.ex.Exchange(context.Background(), s.subject("alice"), orders); !errors.Is(err, ErrUnavailable) {
			t.Errorf("issued_token_type %v: error %v, want ErrUnavailable", v, err)
		}
	}
}

// TestExchange_RFC8693_2_2_1_TokenTypeBearer: token_type is REQUIRED
// (§2.2.1, RFC 6749 §5.1) and compared case-insensitively (RFC 6749
// §5.1); the token is sent as a Bearer token, so N_A, DPoP or none are
// refused; "bearer" is accepted.
func TestExchange_RFC8693_2_2_1_TokenTypeBearer(t *testing.T) {
	for v, ok := range map[any]bool{"N_A": false, "DPoP": false, nil: false, "bearer": true, "BEARER": true} {
		s := newSetup(t)
		s.srv.SetExchangeResponse(func(doc map[string]any) {
			if v == nil {
				delete(doc, "token_type")
			} else {
				doc["token_type"] = v
			}
		})
		_, err := s.ex.Exchange(context.Background(), s.subject("alice"), orders)
		if (err == nil) != ok {
			t.Errorf("token_type %v: error %v", v, err)
		}
	}
}

// TestExchange_RFC6749_5_1_UnknownMembersIgnored: the client MUST ignore
// unrecognized value names; expires_in is RECOMMENDED: without it the
// token is kept until the subject token's expiry (minus the margin).
func TestExchange_RFC6749_5_1_UnknownMembersIgnored(t *testing.T) {
	s := newSetup(t)
	s.srv.SetExchangeResponse(func(doc map[string]any) {
		doc["x-custom"] = map[string]any{"a": 1}
		delete(doc, "expires_in")
	})
	sub := s.subject("alice")
	tok, err := s.ex.Exchange(context.Background(), sub, orders)
	if err != nil {
		t.Fatal(err)
	}
	if !tok.Expiry.Equal(sub.Expiry) {
		t.Errorf("expiry %s, want the subject token's %s", tok.Expiry, sub.Expiry)
	}
}

// TestExchange_RFC8693_2_2_2_ErrorResponse: a refusal is an RFC 6749 §5.2
// error document, returned with its code; Keycloak's rules give the
// codes.
func TestExchange_RFC8693_2_2_2_ErrorResponse(t *testing.T) {
	s := newSetup(t)
	ctx := context.Background()
	for name, c := range map[string]struct {
		sub  Subject
		tgt  Target
		code string
	}{
		"not in aud":       {s.subject("bob", func(c map[string]any) { c["aud"] = "account" }), orders, "access_denied"},
		"unknown audience": {s.subject("bob"), Target{Audience: "nope"}, "invalid_client"},
		"expired subject":  {s.subject("bob", func(c map[string]any) { c["exp"] = s.clk.Now().Add(-time.Minute).Unix() }), orders, "invalid_request"},
		"forged subject":   {Subject{Token: "eyJhbGciOiJub25lIn0.e30."}, orders, "invalid_request"},
	} {
		_, err := s.ex.Exchange(ctx, c.sub, c.tgt)
		if re := refusalOf(t, err); re.ErrorCode != c.code {
			t.Errorf("%s: code %q, want %q", name, re.ErrorCode, c.code)
		}
	}
	for _, code := range []string{"invalid_request", "invalid_client", "unauthorized_client", "access_denied"} {
		s.srv.SetExchangeRefusal(code)
		_, err := s.ex.Exchange(ctx, s.subject("carol"), orders)
		if re := refusalOf(t, err); re.ErrorCode != code {
			t.Errorf("refusal %s: code %q", code, re.ErrorCode)
		}
	}
	// A client without standard token exchange.
	s2 := newSetup(t, func(o *Options) { o.ClientID, o.ClientSecret = "robot", "robot-secret" })
	_, err := s2.ex.Exchange(ctx, s2.subject("alice", func(c map[string]any) { c["aud"] = "robot" }), orders)
	if re := refusalOf(t, err); re.ErrorCode != "unauthorized_client" {
		t.Errorf("code %q", re.ErrorCode)
	}
}

// TestExchangeOutage: no answer, a 5xx or a 429 is an outage with the
// provider's Retry-After; nothing is cached.
func TestExchangeOutage(t *testing.T) {
	s := newSetup(t)
	s.srv.SetTokenOutage(http.StatusServiceUnavailable, 7)
	sub := s.subject("alice")
	_, err := s.ex.Exchange(context.Background(), sub, orders)
	var ue *UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnavailable) || ue.RetryAfter != 7*time.Second {
		t.Fatalf("error %v", err)
	}
	s.srv.SetTokenOutage(http.StatusTooManyRequests, 0)
	if _, err := s.ex.Exchange(context.Background(), sub, orders); !errors.As(err, &ue) || ue.RetryAfter != DefaultRetryAfter {
		t.Fatalf("429: %v", err)
	}
	s.srv.SetTokenOutage(0, 0)
	if _, err := s.ex.Exchange(context.Background(), sub, orders); err != nil {
		t.Fatal(err)
	}
	dead, _ := New(Options{TokenURL: "http://127.0.0.1:1/token", ClientID: "a", ClientSecret: "b"})
	if _, err := dead.Exchange(context.Background(), sub, orders); !errors.Is(err, ErrUnavailable) {
		t.Errorf("connection refused: %v", err)
	}
}

// TestExchangeCache: one exchange per (subject token, audience, scopes)
// until the earlier expiry minus the margin; the scopes' order does not
// matter.
func TestExchangeCache(t *testing.T) {
	s := newSetup(t)
	ctx := context.Background()
	sub := s.subject("alice")
	first, _ := s.ex.Exchange(ctx, sub, orders)
	for range 3 {
		tok, err := s.ex.Exchange(ctx, sub, Target{Audience: "orders-api", Scopes: []string{"orders", "openid", "orders"}})
		if err != nil || tok != first {
			t.Fatalf("not reused: %v", err)
		}
	}
	if n := s.srv.Exchanges(); n != 1 {
		t.Fatalf("%d exchanges, want 1", n)
	}
	s.ex.Exchange(ctx, sub, Target{Audience: "orders-api"})
	s.ex.Exchange(ctx, s.subject("alice"), orders)
	if n := s.srv.Exchanges(); n != 3 {
		t.Fatalf("another target and another token: %d exchanges, want 3", n)
	}
	s.clk.Add(5*time.Minute - DefaultMargin - time.Second) // the token's 5m, less the margin
	if tok, _ := s.ex.Exchange(ctx, sub, orders); tok != first {
		t.Fatal("renewed before the margin")
	}
	s.clk.Add(2 * time.Second)
	if tok, _ := s.ex.Exchange(ctx, sub, orders); tok == first || s.srv.Exchanges() != 4 {
		t.Fatal("not renewed within the margin")
	}
	// A subject token that expires first bounds the cache.
	short := s.subject("dave", func(c map[string]any) { c["exp"] = s.clk.Now().Add(2 * time.Minute).Unix() })
	a, _ := s.ex.Exchange(ctx, short, orders)
	s.clk.Add(2*time.Minute - DefaultMargin + time.Second)
	if b, _ := s.ex.Exchange(ctx, short, orders); b == a {
		t.Error("kept past the subject token's expiry less the margin")
	}
}

// TestExchangeOneInFlight: 200 concurrent calls for one subject make one
// exchange; they all wait for it.
func TestExchangeOneInFlight(t *testing.T) {
	s := newSetup(t)
	const n = 200
	var waiting sync.WaitGroup
	waiting.Add(n)
	s.ex.waiting = waiting.Done
	release := s.srv.HoldExchanges()
	sub := s.subject("alice")
	toks := make(chan *oauth2.Token, n)
	for range n {
		go func() {
			tok, err := s.ex.Exchange(context.Background(), sub, orders)
			if err != nil {
				t.Error(err)
			}
			toks <- tok
		}()
	}
	waiting.Wait()
	release()
	first := <-toks
	for range n - 1 {
		if <-toks != first {
			t.Fatal("callers got different tokens")
		}
	}
	if got := s.srv.Exchanges(); got != 1 {
		t.Errorf("%d exchanges for %d concurrent calls, want 1", got, n)
	}
}

// TestExchangeCallerGoesAway: a caller whose context ends stops waiting;
// the exchange goes on for the others.
func TestExchangeCallerGoesAway(t *testing.T) {
	s := newSetup(t)
	release := s.srv.HoldExchanges()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	s.ex.waiting = func() { close(started) }
	errc := make(chan error, 1)
	sub := s.subject("alice")
	go func() { _, err := s.ex.Exchange(ctx, sub, orders); errc <- err }()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v", err)
	}
	s.ex.waiting = nil
	release()
	if _, err := s.ex.Exchange(context.Background(), sub, orders); err != nil || s.srv.Exchanges() != 1 {
		t.Fatalf("%v, %d exchanges", err, s.srv.Exchanges())
	}
}

// TestExchangeDrop: DropSession and DropSubject forget a session's and a
// user's tokens, and an exchange in flight during a drop is not cached.
func TestExchangeDrop(t *testing.T) {
	s := newSetup(t)
	ctx := context.Background()
	a1, a2, b := s.subject("alice"), s.subject("alice"), s.subject("bob")
	for _, sub := range []Subject{a1, a2, b} {
		s.ex.Exchange(ctx, sub, orders)
	}
	if n := s.ex.DropSession(a1.SessionID); n != 1 {
		t.Fatalf("DropSession dropped %d", n)
	}
	s.ex.Exchange(ctx, a2, orders)
	s.ex.Exchange(ctx, b, orders)
	if s.srv.Exchanges() != 3 {
		t.Fatal("DropSession dropped another session's token")
	}
	s.ex.Exchange(ctx, a1, orders)
	if s.srv.Exchanges() != 4 {
		t.Fatal("the dropped session's token is still cached")
	}
	if n := s.ex.DropSubject(a1.Sub); n != 2 {
		t.Fatalf("DropSubject dropped %d, want 2", n)
	}
	// In flight across a drop: returned, not cached.
	release := s.srv.HoldExchanges()
	started := make(chan struct{})
	s.ex.waiting = func() { close(started) }
	done := make(chan struct{})
	go func() { s.ex.Exchange(ctx, b, Target{Audience: "orders-api"}); close(done) }()
	<-started
	s.ex.waiting = nil
	s.ex.DropSession(b.SessionID)
	release()
	<-done
	before := s.srv.Exchanges()
	s.ex.Exchange(ctx, b, Target{Audience: "orders-api"})
	if s.srv.Exchanges() != before+1 {
		t.Error("an exchange in flight across a drop was cached")
	}
}

// TestExchangeCacheBounded: the cache never holds more than CacheSize.
func TestExchangeCacheBounded(t *testing.T) {
	s := newSetup(t, func(o *Options) { o.CacheSize = 4 })
	for range 10 {
		s.ex.Exchange(context.Background(), s.subject("alice"), orders)
	}
	if n := len(s.ex.cache.m); n > 4 {
		t.Errorf("%d entries, bound 4", n)
	}
}

func TestExchangeTokenSource(t *testing.T) {
	s := newSetup(t)
	sub := s.subject("alice")
	var ts oauth2.TokenSource = s.ex.TokenSource(context.Background(), sub, orders)
	tok, err := ts.Token()
	if err != nil || !tok.Valid() {
		t.Fatal(err)
	}
	r, _ := http.NewRequest("GET", "/", nil)
	if _, err := s.ex.FromRequest(r, orders).Token(); !errors.Is(err, ErrNoIdentity) {
		t.Errorf("no identity: %v", err)
	}
}

// TestExchangeDiscoversTheTokenEndpoint: with Issuer, the token endpoint
// comes from the discovery document.
func TestExchangeDiscoversTheTokenEndpoint(t *testing.T) {
	s := newSetup(t)
	ex, err := New(Options{Issuer: s.srv.Issuer, ClientID: "proxy", ClientSecret: "proxy-secret", Now: s.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ex.Exchange(context.Background(), s.subject("alice"), orders); err != nil {
		t.Fatal(err)
	}
	cc, _ := NewClientCredentials(ClientCredentialsOptions{Issuer: s.srv.Issuer, ClientID: "robot", ClientSecret: "robot-secret"})
	if _, err := cc.Token(); err != nil {
		t.Fatal(err)
	}
	bad, _ := New(Options{Issuer: s.srv.URL + "/realms/other", ClientID: "proxy", ClientSecret: "proxy-secret"})
	if _, err := bad.Exchange(context.Background(), s.subject("alice"), orders); !errors.Is(err, ErrUnavailable) {
		t.Errorf("no discovery: %v", err)
	}
}

func TestNewErrors(t *testing.T) {
	for _, o := range []Options{
		{TokenURL: "ftp://x/token", ClientID: "a", ClientSecret: "b"},
		{TokenURL: "https://x/token", ClientSecret: "b"},
		{TokenURL: "https://x/token", ClientID: "a"},
		{ClientID: "a", ClientSecret: "b"},
		{Issuer: "x", ClientID: "a", ClientSecret: "b"},
	} {
		if _, err := New(o); !errors.Is(err, ErrOptions) {
			t.Errorf("%+v: %v", o, err)
		}
	}
}
