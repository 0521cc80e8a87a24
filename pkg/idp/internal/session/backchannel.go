package session

import (
	"context"
	"time"
)

// EndProviderSessions ends the sessions of a back-channel logout token
// (OpenID Connect Back-Channel Logout 1.0): those of the provider session
// sid, or, without sid, every session of sub. jti, when set, is used once:
// in the Backend for keep (the token's replay window), or, with the cookie
// store, when firstUse(jti) reports its first use. It reports how many
// sessions it ended; the cookie store records the logout instead (-1).
func (m *Manager) EndProviderSessions(ctx context.Context, sid, sub, jti string, keep time.Duration, firstUse func(jti string) bool) (int, error) {
	now := m.d.Now()
	if m.backend == nil {
		until := now.Add(m.cfg.MaxAge).Unix()
		if jti != "" && !firstUse(jti) {
			return 0, nil // replayed: already done
		}
		if sid != "" {
			m.revoked.revokeSID(sid, until)
		} else {
			m.revoked.revokeSub(sub, now.Unix(), until)
		}
		return -1, nil
	}
	if jti != "" {
		first, err := m.backend.SetNX(ctx, usedLogoutKey(jti), []byte("1"), keep)
		if err != nil {
			return 0, err
		}
		if !first {
			return 0, nil
		}
	}
	index := sessionBySID(sid)
	if sid == "" {
		index = sessionBySub(sub)
	}
	ids, err := m.backend.SetMembers(ctx, index)
	if err != nil {
		return 0, err
	}
	keys := make([]string, 0, len(ids)+1)
	for _, id := range ids {
		keys = append(keys, sessionKey(id))
	}
	if err := m.backend.Delete(ctx, append(keys, index)...); err != nil {
		return 0, err
	}
	return len(ids), nil
}
