package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/idperr"
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
	s     *Session
	err   error
}

// refresh renews s's tokens once per session: concurrent requests of one
// process share one call, and with a backend one replica refreshes while
// the others wait for its result. value is the presented cookie value.
//
// Only the request that starts the flight waits for it as long as its
// token needs (see Options.RefreshWait); the others wait at most
// until the flight is RefreshWait old, then fail with errRefreshPending
// at once, so that a provider that hangs holds one request, not all of
// them.
func (m *Manager) refresh(ctx context.Context, s *Session, value string) (*Session, error) {
	if s.Refresh == "" {
		if m.d.Now().Unix() < s.AccessExp {
			return s, nil
		}
		return nil, ErrEnded
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
	case time.Unix(s.AccessExp, 0).Sub(m.d.Now()) <= 2*w:
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
	if m.OnRefreshWait != nil {
		m.OnRefreshWait()
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
// Options.RefreshWait; the request goes on with its current token
// while that is valid, else it is refused (503) at once.
var errRefreshPending = errors.New("idp: the session refresh is still under way")

// ErrRefreshUnavailable: the provider has not refreshed a session whose
// access token has expired (it hangs or is unreachable), so the request
// cannot go on; answered 503 naming the provider, never its keys.
var ErrRefreshUnavailable = errors.New("idp: the identity provider has not refreshed the session's expired access token")

// runRefresh is the flight f: it refreshes s (value is the presented
// cookie value), then releases the waiters.
func (m *Manager) runRefresh(ctx context.Context, f *refreshFlight, key flightKey, s *Session, value string) {
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
			now := m.d.Now()
			m.cache.put(value, openedEntry{s: f.s, replace: sealed}, now)
			m.cache.put(sealed, openedEntry{s: f.s}, now)
		}
	}
}

// refreshShared refreshes a backend session under a lock shared by the
// replicas; a replica that finds the lock taken waits for the new tokens.
func (m *Manager) refreshShared(ctx context.Context, s *Session) (*Session, error) {
	wait := m.d.HTTPTimeout + 2*time.Second
	got, err := m.backend.SetNX(ctx, sessionLockKey(s.ID), []byte("1"), wait)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", idperr.ErrSessionStoreUnavailable, err)
	}
	if !got {
		deadline := time.Now().Add(wait)
		for time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			b, err := m.backend.Get(ctx, sessionKey(s.ID))
			if errors.Is(err, ErrNotFound) {
				return nil, ErrEnded
			}
			if err != nil {
				return nil, fmt.Errorf("%w: %w", idperr.ErrSessionStoreUnavailable, err)
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
	if errors.Is(err, ErrNotFound) {
		return nil, ErrEnded
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", idperr.ErrSessionStoreUnavailable, err)
	}
	if cur, err := unmarshalSession(b); err == nil && cur.Refresh != s.Refresh {
		return cur, nil
	}
	ns, err := m.refreshTokens(ctx, s)
	if errors.Is(err, ErrEnded) {
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
// access token. A refusal (Deps.Refresh's ErrEnded) ends the session;
// other failures are errors.
func (m *Manager) refreshTokens(ctx context.Context, s *Session) (*Session, error) {
	cctx, cancel := context.WithTimeout(ctx, m.d.HTTPTimeout)
	defer cancel()
	tok, err := m.d.Refresh(cctx, s.Refresh)
	if err != nil {
		return nil, err
	}
	at, err := m.d.Verify(cctx, tok.AccessToken)
	if err != nil {
		m.d.Logger.Warn("idp: session refresh: the provider issued an access token this service refuses", "error", err)
		return nil, ErrEnded
	}
	ns := *s
	ns.Access = tok.AccessToken
	ns.AccessExp = at.Exp
	ns.AccessIat = at.issuedAt()
	if tok.RefreshToken != "" {
		ns.Refresh = tok.RefreshToken
	}
	if raw, _ := tok.Extra("id_token").(string); raw != "" {
		// Kept for the logout's id_token_hint, once its signature checks.
		if m.d.IDTokenSigned(cctx, raw) {
			ns.IDToken = raw
		}
	}
	return &ns, nil
}
