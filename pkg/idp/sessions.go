package idp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/oauth2"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/seal"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/session"
)

// The plugin's end of the seam to its browser sessions (package
// internal/session): what a session needs of the verifier and the
// provider, and nothing else.

// newSessions returns the session manager of cfg.Session.
func newSessions(p *Plugin, cfg SessionConfig, secure bool) (*session.Manager, error) {
	d := session.Deps{
		Now:         p.cfg.Now,
		Logger:      p.cfg.Logger,
		HTTPTimeout: p.cfg.HTTPTimeout,
		Secret:      p.cfg.SessionSecret,
		Scope:       sealScope(p.cfg, p.issuer),
		CrossOrigin: p.cop.Check,
		Refresh:     p.redeemRefreshToken,
		Verify: func(ctx context.Context, raw string) (session.Times, error) {
			id, err := p.verify(ctx, raw)
			if err != nil {
				return session.Times{}, err
			}
			return accessTimes(id), nil
		},
		IDTokenSigned: p.idTokenSigned,
		Stopped:       p.stopped,
	}
	return session.New(d, session.Options{
		Backend: cfg.Backend, CookieName: cfg.CookieName, CookieDomain: cfg.CookieDomain,
		MaxAge: cfg.MaxAge, RefreshMargin: cfg.RefreshMargin, RefreshWait: cfg.RefreshWait,
		PreviousSecrets: cfg.PreviousSecrets, CacheSize: cfg.CacheSize, Secure: secure,
	})
}

// accessTimes are the exp and iat of a verified access token.
func accessTimes(id *Identity) session.Times {
	t := session.Times{Exp: id.Payload.ExpiresAt.Unix()}
	if !id.Payload.IssuedAt.IsZero() {
		t.Iat = id.Payload.IssuedAt.Unix()
	}
	return t
}

// sealScope is the seal.Scope of cfg's sealed cookies.
func sealScope(cfg Config, issuer string) string {
	domain := ""
	if cfg.Session != nil {
		domain = cfg.Session.CookieDomain
	}
	return seal.Scope(cfg.RedirectURI, domain, issuer, cfg.ClientID)
}

// redeemRefreshToken asks the provider for new tokens for a session. A
// refusal (an OAuth error with a 4xx status) wraps session.ErrEnded.
func (p *Plugin) redeemRefreshToken(ctx context.Context, refreshToken string) (*oauth2.Token, error) {
	conf, err := p.oauthConfig(nil)
	if err != nil {
		return nil, err
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, p.cfg.HTTPClient)
	rctx, span := p.startSpan(ctx, "idp.token.refresh", trace.SpanKindClient)
	span.SetAttributes(AttrSession.Bool(true))
	tok, err := conf.TokenSource(rctx, &oauth2.Token{RefreshToken: refreshToken}).Token()
	endSpan(span, err, "the provider refused the refresh token or could not be reached")
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode/100 == 4 {
			if code := sanitizeErrorCode(re.ErrorCode); clientRefused(re.Response.StatusCode, code) {
				p.cfg.Logger.Error("idp: session refresh: the identity provider refused this client's credentials; check client_id and client_secret",
					"status", re.Response.StatusCode, "error", code, "client_id", p.cfg.ClientID)
			}
			return nil, fmt.Errorf("%w: %w", session.ErrEnded, err)
		}
		return nil, err
	}
	return tok, nil
}

// SessionBackend stores sessions server-side. Keys and values are opaque
// to it; values carry tokens, so a backend must not be shared with
// untrusted parties. Implementations must be safe for concurrent use. See
// pkg/idp/redisstore for Redis, NewMemoryBackend for one process.
type SessionBackend interface {
	// Get returns the value of key, or ErrSessionNotFound.
	Get(ctx context.Context, key string) ([]byte, error)
	// Set stores value under key for ttl.
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// SetNX stores value under key for ttl only when key is absent, and
	// reports whether it did (single-use values, locks).
	SetNX(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error)
	// Delete removes keys; absent keys are not an error.
	Delete(ctx context.Context, keys ...string) error
	// AddToSet adds member to the set key and keeps the set for at least
	// ttl.
	AddToSet(ctx context.Context, key, member string, ttl time.Duration) error
	// SetMembers returns the members of the set key (none when absent).
	SetMembers(ctx context.Context, key string) ([]string, error)
}

// NewMemoryBackend returns a SessionBackend that keeps everything in this
// process's memory: for a single replica and for tests. Sessions do not
// survive a restart; use a shared backend (pkg/idp/redisstore) for
// several replicas.
func NewMemoryBackend() SessionBackend { return session.NewMemoryBackend() }

// SessionBackendPinger is implemented by session backends that can tell
// whether they are reachable without touching a session (redisstore.Store
// does), for readiness checks.
type SessionBackendPinger interface {
	Ping(ctx context.Context) error
}

// PingSessionStore checks the session store of Config.Session: checked is
// false when there is nothing to check (no sessions, the cookie store, or
// a backend without Ping); otherwise err, when not nil, wraps
// ErrSessionStoreUnavailable.
func (p *Plugin) PingSessionStore(ctx context.Context) (checked bool, err error) {
	if p.sessions == nil {
		return false, nil
	}
	return p.sessions.Ping(ctx)
}
