package idp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/oauth2"
)

// flightKey names a refresh: the session and the refresh token it
// redeems. A request that read the session before a refresh finished
// still holds the redeemed token; it finds the finished flight under
// this key and takes its result instead of redeeming the token again,
// which a provider that rotates refresh tokens refuses (ending the
// session).
type flightKey struct{ id, refresh string }

// refreshedGrace is how long a successful refresh is kept for requests
// that read the session before it finished.
const refreshedGrace = 30 * time.Second

type refreshFlight struct {
	done  chan struct{}
	start time.Time // when the flight began (monotonic)
	s     *session
	err   error
}

// refresh renews s's tokens once per session: concurrent requests of one
// process share one call, and with a backend one replica refreshes while
// the others wait for its result. value is the presented cookie value.
//
// Only the request that starts the flight waits for it as long as its
// token needs (see SessionConfig.RefreshWait); the others wait at most
// until the flight is RefreshWait old, then fail with errRefreshPending
// at once, so that a provider that hangs holds one request, not all of
// them.
func (m *sessionManager) refresh(ctx context.Context, s *session, value string) (*session, error) {
	if s.Refresh == "" {
		if m.p.cfg.Now().Unix() < s.AccessExp {
			return s, nil
		}
		return nil, errSessionEnded
	}
	key := flightKey{s.ID, s.Refresh}
	m.mu.Lock()
	f, joined := m.flights[key]
	if !joined {
		f = &refreshFlight{done: make(chan struct{}), start: time.Now()}
		m.flights[key] = f
		// The flight outlives the request that started it (cancelled, or
		// gone on with its current token): the others wait on it.
		go m.runRefresh(context.WithoutCancel(ctx), f, key, s, value)
	}
	m.mu.Unlock()
	select {
	case <-f.done:
		return f.s, f.err
	default:
	}
	w := m.cfg.RefreshWait
	switch {
	case w < 0: // always wait
	case joined:
		if w -= time.Since(f.start); w <= 0 {
			return nil, errRefreshPending
		}
	case time.Unix(s.AccessExp, 0).Sub(m.p.cfg.Now()) <= 2*w:
		// Only a token that stays valid well past the wait is worth going
		// on with; one about to expire waits for its successor.
		w = -1
	}
	var waited <-chan time.Time
	if w > 0 {
		t := time.NewTimer(w)
		defer t.Stop()
		waited = t.C
	}
	if m.onRefreshWait != nil {
		m.onRefreshWait()
	}
	select {
	case <-f.done:
		return f.s, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-waited:
		return nil, errRefreshPending
	}
}

// errRefreshPending: the session's refresh has not finished within
// SessionConfig.RefreshWait; the request goes on with its current token
// while that is valid, else it is refused (503) at once.
var errRefreshPending = errors.New("idp: the session refresh is still under way")

// errRefreshUnavailable: the provider has not refreshed a session whose
// access token has expired (it hangs or is unreachable), so the request
// cannot go on; answered 503 naming the provider, never its keys.
var errRefreshUnavailable = errors.New("idp: the identity provider has not refreshed the session's expired access token")

// runRefresh is the flight f: it refreshes s (value is the presented
// cookie value), then releases the waiters.
func (m *sessionManager) runRefresh(ctx context.Context, f *refreshFlight, key flightKey, s *session, value string) {
	forget := func() {
		m.mu.Lock()
		delete(m.flights, key)
		m.mu.Unlock()
	}
	defer func() {
		close(f.done)
		if f.err != nil {
			forget() // the next request tries again
			return
		}
		time.AfterFunc(refreshedGrace, forget)
	}()
	if m.backend != nil {
		f.s, f.err = m.refreshShared(ctx, s)
		return
	}
	f.s, f.err = m.refreshTokens(ctx, s)
	if f.err == nil {
		if sealed, err := m.sealSession(f.s); err == nil {
			now := m.p.cfg.Now()
			m.cache.put(value, openedEntry{s: f.s, replace: sealed}, now)
			m.cache.put(sealed, openedEntry{s: f.s}, now)
		}
	}
}

// refreshShared refreshes a backend session under a lock shared by the
// replicas; a replica that finds the lock taken waits for the new tokens.
func (m *sessionManager) refreshShared(ctx context.Context, s *session) (*session, error) {
	wait := m.p.cfg.HTTPTimeout + 2*time.Second
	got, err := m.backend.SetNX(ctx, sessionLockKey(s.ID), []byte("1"), wait)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSessionStoreUnavailable, err)
	}
	if !got {
		deadline := time.Now().Add(wait)
		for time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			b, err := m.backend.Get(ctx, sessionKey(s.ID))
			if errors.Is(err, ErrSessionNotFound) {
				return nil, errSessionEnded
			}
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrSessionStoreUnavailable, err)
			}
			if ns, err := unmarshalSession(b); err == nil && ns.Access != s.Access {
				return ns, nil
			}
		}
		return nil, errors.New("another replica's refresh did not finish in time")
	}
	defer func() { _ = m.backend.Delete(ctx, sessionLockKey(s.ID)) }()
	// Another replica may have refreshed (and released the lock) since s
	// was read: its refresh token is then redeemed, the stored session is
	// the current one.
	b, err := m.backend.Get(ctx, sessionKey(s.ID))
	if errors.Is(err, ErrSessionNotFound) {
		return nil, errSessionEnded
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSessionStoreUnavailable, err)
	}
	if cur, err := unmarshalSession(b); err == nil && cur.Refresh != s.Refresh {
		return cur, nil
	}
	ns, err := m.refreshTokens(ctx, s)
	if errors.Is(err, errSessionEnded) {
		_ = m.backend.Delete(ctx, sessionKey(s.ID))
	}
	if err != nil {
		return nil, err
	}
	if err := m.store(ctx, ns); err != nil {
		return nil, err
	}
	return ns, nil
}

// refreshTokens asks the provider for new tokens and verifies the new
// access token. A refusal (an OAuth error with a 4xx status) ends the
// session; other failures are errors.
func (m *sessionManager) refreshTokens(ctx context.Context, s *session) (*session, error) {
	conf, err := m.p.oauthConfig(nil)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, m.p.cfg.HTTPTimeout)
	defer cancel()
	cctx = context.WithValue(cctx, oauth2.HTTPClient, m.p.cfg.HTTPClient)
	rctx, span := m.p.startSpan(cctx, "idp.token.refresh", trace.SpanKindClient)
	span.SetAttributes(AttrSession.Bool(true))
	tok, err := conf.TokenSource(rctx, &oauth2.Token{RefreshToken: s.Refresh}).Token()
	endSpan(span, err, "the provider refused the refresh token or could not be reached")
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode/100 == 4 {
			if code := sanitizeErrorCode(re.ErrorCode); clientRefused(re.Response.StatusCode, code) {
				m.p.cfg.Logger.Error("idp: session refresh: the identity provider refused this client's credentials; check client_id and client_secret",
					"status", re.Response.StatusCode, "error", code, "client_id", m.p.cfg.ClientID)
			}
			return nil, errSessionEnded
		}
		return nil, err
	}
	id, err := m.p.verify(cctx, tok.AccessToken)
	if err != nil {
		m.p.cfg.Logger.Warn("idp: session refresh: the provider issued an access token this service refuses", "error", err)
		return nil, errSessionEnded
	}
	ns := *s
	ns.Access = tok.AccessToken
	ns.AccessExp = id.Payload.ExpiresAt.Unix()
	ns.AccessIat = issuedAt(id)
	if tok.RefreshToken != "" {
		ns.Refresh = tok.RefreshToken
	}
	if raw, _ := tok.Extra("id_token").(string); raw != "" {
		// Kept for the logout's id_token_hint, once its signature checks.
		if m.p.idTokenSigned(cctx, raw) {
			ns.IDToken = raw
		}
	}
	return &ns, nil
}
