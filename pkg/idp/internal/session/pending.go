package session

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// Sign-outs during a session-store outage. The browser's cookie is
// cleared at once, so the sign-out holds there; the session itself is
// still in the store, where a copy of the cookie would find it once the
// store is back. The manager keeps such session IDs: this replica refuses
// them from then on (before any read of the store), and deletes them from
// the store (and ends them at the provider, when routes are mounted) as
// soon as the store answers again: at its next successful call, or the
// next retry. The IDs live in this process's memory only: a replica that
// stops before the store is back loses them (Close tries once more and
// logs how many are lost).

// maxPendingDeletions bounds the session IDs kept for deletion while the
// store is down; further sign-outs are logged as not followed up.
const maxPendingDeletions = 10_000

// pendingRetryInterval is how often pending deletions are retried while
// the store does not answer. Short: until this replica deletes them, the
// other replicas accept the signed-out sessions once the store is back.
const pendingRetryInterval = 200 * time.Millisecond

// pendingDeletions is guarded by Manager.mu, but for n and kick.
type pendingDeletions struct {
	ids      map[string]bool // session id → ended at the provider already
	n        atomic.Int32    // len(ids), read on every session read
	retrying bool
	// kick wakes the retries at once: the store answered a call.
	kick chan struct{}
	// lateLogout ends a session at the provider once it could be read
	// (the /auth routes' provider logout); nil without routes.
	lateLogout func(ctx context.Context, refreshToken string) string
}

// SetLateLogout sets the provider logout run for sessions whose deletion
// had to wait for the store.
func (m *Manager) SetLateLogout(f func(ctx context.Context, refreshToken string) string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending.lateLogout = f
}

// signedOut reports whether session id was signed out while the store
// was unavailable and is not yet deleted there.
func (m *Manager) signedOut(id string) bool {
	if m.pending.n.Load() == 0 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.pending.ids[id]
	return ok
}

// storeAnswered wakes the pending deletions, if any, after a successful
// call to the store.
func (m *Manager) storeAnswered() {
	if m.pending.n.Load() == 0 {
		return
	}
	select {
	case m.pending.kick <- struct{}{}:
	default:
	}
}

// deleteLater records the session id for deletion once the store answers;
// providerDone says that the sign-out already ended it at the provider
// (the session could be read before the store failed).
func (m *Manager) deleteLater(id string, providerDone bool) {
	if m.backend == nil || !validSessionID(id) {
		return
	}
	m.mu.Lock()
	if m.pending.ids == nil {
		m.pending.ids = map[string]bool{}
		m.pending.kick = make(chan struct{}, 1)
	}
	if len(m.pending.ids) >= maxPendingDeletions {
		m.mu.Unlock()
		m.d.Logger.Error("idp: too many sign-outs wait for the session store; this one clears the cookie only")
		return
	}
	m.pending.ids[id] = m.pending.ids[id] || providerDone
	m.pending.n.Store(int32(len(m.pending.ids)))
	start := !m.pending.retrying
	m.pending.retrying = true
	m.mu.Unlock()
	if start {
		go m.retryDeletions()
	}
}

// retryDeletions deletes the pending sessions every pendingRetryInterval,
// or as soon as the store answers a call, until none is left or the
// plugin is closed.
func (m *Manager) retryDeletions() {
	t := time.NewTicker(pendingRetryInterval)
	defer t.Stop()
	for {
		select {
		case <-m.d.Stopped:
			m.mu.Lock()
			m.pending.retrying = false
			m.mu.Unlock()
			return
		case <-t.C:
		case <-m.pending.kick:
		}
		if m.deletePendingOnce(context.Background()) {
			return
		}
	}
}

// deletePendingOnce tries to delete every pending session, stopping at
// the first failure of the store; it reports whether none is left (the
// retries then end).
func (m *Manager) deletePendingOnce(ctx context.Context) bool {
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
		if err := m.deletePending(ctx, id, logout); err != nil {
			m.d.Logger.Debug("idp: pending sign-outs still wait for the session store", "pending", len(ids), "error", err)
			break // the store is still down: try again later
		}
		m.mu.Lock()
		delete(m.pending.ids, id)
		m.pending.n.Store(int32(len(m.pending.ids)))
		m.mu.Unlock()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.pending.ids) == 0 {
		m.pending.retrying = false
		return true
	}
	return false
}

// ClosePending runs when the plugin closes: one last try at the pending
// deletions within ctx, then an error log of the sign-outs lost with this
// process (their sessions stay valid in the store until they expire).
func (m *Manager) ClosePending(ctx context.Context) {
	if m.pending.n.Load() == 0 {
		return
	}
	if m.deletePendingOnce(ctx) {
		return
	}
	m.d.Logger.Error("idp: sign-outs made while the session store was unavailable are lost with this process: "+
		"their sessions stay valid in the store, for a copy of the cookie, until they expire (session max age)",
		"lost", m.pending.n.Load())
}

// deletePending ends one session whose sign-out the store missed: read it
// (for the provider logout), delete it, then end it at the provider.
func (m *Manager) deletePending(ctx context.Context, id string, lateLogout func(context.Context, string) string) error {
	ctx, cancel := context.WithTimeout(ctx, m.d.HTTPTimeout)
	defer cancel()
	b, err := m.backend.Get(ctx, sessionKey(id))
	if errors.Is(err, ErrNotFound) {
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
	m.d.Logger.Info("idp: session ended by a sign-out made while the session store was unavailable", "sub", sub, "provider_logout", outcome)
	return nil
}
