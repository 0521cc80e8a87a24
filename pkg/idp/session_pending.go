package idp

import (
	"context"
	"errors"
	"time"
)

// Sign-outs during a session-store outage. The browser's cookie is
// cleared at once, so the sign-out holds there; the session itself is
// still in the store, where a copy of the cookie would find it once the
// store is back. The manager keeps such session IDs and deletes them (and
// ends the provider's session, when routes are mounted) as soon as the
// store answers again.

// maxPendingDeletions bounds the session IDs kept for deletion while the
// store is down; further sign-outs are logged as not followed up.
const maxPendingDeletions = 10_000

// pendingRetryInterval is how often pending deletions are retried.
const pendingRetryInterval = time.Second

// pendingDeletions is guarded by sessionManager.mu.
type pendingDeletions struct {
	ids      map[string]bool // session id → ended at the provider already
	retrying bool
	// lateLogout ends a session at the provider once it could be read
	// (the /auth routes' provider logout); nil without routes.
	lateLogout func(ctx context.Context, refreshToken string) string
}

// setLateLogout sets the provider logout run for sessions whose deletion
// had to wait for the store.
func (m *sessionManager) setLateLogout(f func(ctx context.Context, refreshToken string) string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending.lateLogout = f
}

// deleteLater records the session id for deletion once the store answers;
// providerDone says that the sign-out already ended it at the provider
// (the session could be read before the store failed).
func (m *sessionManager) deleteLater(id string, providerDone bool) {
	if m.backend == nil || !validSessionID(id) {
		return
	}
	m.mu.Lock()
	if m.pending.ids == nil {
		m.pending.ids = map[string]bool{}
	}
	if len(m.pending.ids) >= maxPendingDeletions {
		m.mu.Unlock()
		m.p.cfg.Logger.Error("idp: too many sign-outs wait for the session store; this one clears the cookie only")
		return
	}
	m.pending.ids[id] = providerDone
	start := !m.pending.retrying
	m.pending.retrying = true
	m.mu.Unlock()
	if start {
		go m.retryDeletions()
	}
}

// retryDeletions deletes the pending sessions every pendingRetryInterval
// until none is left or the plugin is closed.
func (m *sessionManager) retryDeletions() {
	t := time.NewTicker(pendingRetryInterval)
	defer t.Stop()
	for {
		select {
		case <-m.p.stopped:
			return
		case <-t.C:
		}
		m.mu.Lock()
		ids := make(map[string]bool, len(m.pending.ids))
		for id, done := range m.pending.ids {
			ids[id] = done
		}
		lateLogout := m.pending.lateLogout
		m.mu.Unlock()
		for id, done := range ids {
			logout := lateLogout
			if done {
				logout = nil
			}
			if err := m.deletePending(id, logout); err != nil {
				m.p.cfg.Logger.Debug("idp: pending sign-outs still wait for the session store", "pending", len(ids), "error", err)
				break // the store is still down: try again later
			}
			m.mu.Lock()
			delete(m.pending.ids, id)
			m.mu.Unlock()
		}
		m.mu.Lock()
		if len(m.pending.ids) == 0 {
			m.pending.retrying = false
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
	}
}

// deletePending ends one session whose sign-out the store missed: read it
// (for the provider logout), delete it, then end it at the provider.
func (m *sessionManager) deletePending(id string, lateLogout func(context.Context, string) string) error {
	ctx, cancel := context.WithTimeout(context.Background(), m.p.cfg.HTTPTimeout)
	defer cancel()
	b, err := m.backend.Get(ctx, sessionKey(id))
	if errors.Is(err, ErrSessionNotFound) {
		return nil // expired or ended meanwhile
	}
	if err != nil {
		return err
	}
	if err := m.backend.Delete(ctx, sessionKey(id)); err != nil {
		return err
	}
	outcome := "skipped"
	s, err := unmarshalSession(b)
	if err == nil && s.Refresh != "" && lateLogout != nil {
		outcome = lateLogout(ctx, s.Refresh)
	}
	sub := ""
	if s != nil {
		sub = s.Sub
	}
	m.p.cfg.Logger.Info("idp: session ended by a sign-out made while the session store was unavailable", "sub", sub, "provider_logout", outcome)
	return nil
}
