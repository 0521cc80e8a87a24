package session

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"golang.org/x/oauth2"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/idperr"
)

// Deps is what a Manager needs of the plugin that owns it: the seam
// between sessions and the verifier. Every field is required.
type Deps struct {
	Now         func() time.Time
	Logger      *slog.Logger
	HTTPTimeout time.Duration // bounds a refresh, and the waits on the store
	// Secret keys the sealed cookies (idp.Config.SessionSecret); Scope is
	// what they belong to (seal.Scope).
	Secret []byte
	Scope  string
	// CrossOrigin refuses a cross-origin unsafe request (the plugin's
	// http.CrossOriginProtection): its cookie is no credential.
	CrossOrigin func(r *http.Request) error
	// Refresh redeems a refresh token at the provider. A refusal of the
	// token (an OAuth error with a 4xx status) wraps ErrEnded.
	Refresh func(ctx context.Context, refreshToken string) (*oauth2.Token, error)
	// Verify verifies an access token as the plugin does and returns its
	// lifetime (Times.Iat 0 when it has none).
	Verify func(ctx context.Context, raw string) (Times, error)
	// IDTokenSigned reports whether an ID token's signature checks (it is
	// kept for the logout's id_token_hint only then).
	IDTokenSigned func(ctx context.Context, raw string) bool
	// Stopped is closed when the plugin is: the retries of pending
	// deletions stop.
	Stopped <-chan struct{}
}

// Times are an access token's exp and iat (Unix seconds; Iat 0 when the
// token has none).
type Times struct{ Exp, Iat int64 }

// Options are idp.SessionConfig's, defaults applied.
type Options struct {
	Backend                  Backend // nil: the cookie store
	CookieName, CookieDomain string
	MaxAge, RefreshMargin    time.Duration
	RefreshWait              time.Duration
	PreviousSecrets          [][]byte
	CacheSize                int
	Secure                   bool // https: Secure cookies with the __Host- prefix
}

// Domain is the session cookie's Domain (Options.CookieDomain), "" for a
// host-only cookie.
func (m *Manager) Domain() string { return m.domain }

// HasBackend reports whether sessions are kept in a Backend rather than
// in their cookies.
func (m *Manager) HasBackend() bool { return m.backend != nil }

// Pinger is idp.SessionBackendPinger.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Ping checks the Backend: checked is false when there is nothing to
// check (the cookie store, or a backend without Ping); otherwise err, when
// not nil, wraps idperr.ErrSessionStoreUnavailable.
func (m *Manager) Ping(ctx context.Context) (checked bool, err error) {
	pinger, ok := m.backend.(Pinger)
	if !ok {
		return false, nil
	}
	if err := pinger.Ping(ctx); err != nil {
		return true, fmt.Errorf("%w: %w", idperr.ErrSessionStoreUnavailable, err)
	}
	m.storeAnswered()
	return true, nil
}
