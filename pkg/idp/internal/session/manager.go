package session

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/idperr"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/seal"
)

// Manager keeps the browser sessions of a plugin: it reads them from
// requests, refreshes their tokens and writes their cookies.
type Manager struct {
	d       Deps
	cfg     Options
	seal    *seal.Sealer
	scope   string       // seal.Scope: a backend session opens only with it
	backend Backend      // nil: the cookie store
	cache   *openedCache // cookie store only
	revoked revocations  // cookie store: back-channel logouts
	secure  bool         // https: Secure cookies with the __Host- prefix
	domain  string       // Options.CookieDomain: a __Secure- cookie with this Domain
	cookie  string       // the cookie's full name

	mu      sync.Mutex
	flights map[flightKey]*refreshFlight // in-process single flight
	pending pendingDeletions             // sign-outs the session store missed

	// BeforeRefresh, when set (tests only), runs between reading a
	// session and refreshing it; OnRefreshWait when a request blocks
	// waiting for a refresh.
	BeforeRefresh, OnRefreshWait func()
}

// ErrEnded: the session is over (refresh refused, revoked, expired,
// unreadable); the request goes on as one without a session.
var ErrEnded = errors.New("idp: session ended")

// New returns the Manager of sessions configured by o.
func New(d Deps, o Options) (*Manager, error) {
	sl, err := seal.New(d.Secret, "session", d.Scope, o.PreviousSecrets...)
	if err != nil {
		return nil, err
	}
	sl.Max = maxCookieChunks * cookieChunk
	m := &Manager{d: d, cfg: o, seal: sl, scope: d.Scope, backend: o.Backend, secure: o.Secure,
		cookie: o.CookieName, flights: map[flightKey]*refreshFlight{}}
	switch {
	case o.CookieDomain != "":
		// Validated: RedirectURI is https.
		m.domain, m.secure = o.CookieDomain, true
		m.cookie = "__Secure-" + o.CookieName
	case o.Secure:
		m.cookie = "__Host-" + o.CookieName
	}
	if m.backend == nil {
		m.cache = newOpenedCache(o.CacheSize)
	}
	return m, nil
}

// CookieNames lists every name the session cookie may take (chunks too).
func (m *Manager) CookieNames() []string {
	names := make([]string, 0, maxCookieChunks)
	for i := range maxCookieChunks {
		names = append(names, chunkName(m.cookie, i))
	}
	return names
}

// Token returns the access token of r's session, refreshed when it is
// about to expire, and the cookies the answer must set (a refreshed
// cookie-store session, or the deletion of an ended session). It fails
// with idperr.ErrNoToken (no usable session) or idperr.ErrUnavailable (the backend or
// the provider cannot be reached and the token has expired).
func (m *Manager) Token(r *http.Request) (string, []*http.Cookie, error) {
	parts, err := cookieParts(r, m.cookie)
	if len(parts) == 0 && err == nil {
		return "", nil, idperr.ErrNoToken
	}
	if m.d.CrossOrigin(r) != nil {
		// A cross-origin unsafe request carries the cookie on its own: no
		// credential (as with the token cookie).
		return "", nil, idperr.ErrNoToken
	}
	if err != nil {
		return "", m.ClearCookies(r), idperr.ErrNoToken
	}
	ctx := r.Context()
	now := m.d.Now()
	s, replace, err := m.load(ctx, parts, now)
	switch {
	case errors.Is(err, idperr.ErrUnavailable):
		return "", nil, err
	case err != nil:
		return "", m.ClearCookies(r), idperr.ErrNoToken
	}
	var cookies []*http.Cookie
	if replace != "" {
		cookies = m.valueCookies(r, replace)
	}
	if s.AccessExp-now.Unix() > m.margin(s) {
		return s.Access, cookies, nil
	}
	if m.BeforeRefresh != nil {
		m.BeforeRefresh()
	}
	ns, err := m.refresh(ctx, s, strings.Join(parts, ""))
	valid := m.d.Now().Unix() < s.AccessExp // after the wait
	switch {
	case err == nil:
		if m.backend == nil {
			if cookies, err = m.cookies(r, ns); err != nil {
				return "", nil, err
			}
		}
		return ns.Access, cookies, nil
	case errors.Is(err, ErrEnded):
		m.d.Logger.Info("idp: session ended: the provider refused its refresh", "sub", s.Sub)
		return "", m.ClearCookies(r), idperr.ErrNoToken
	case valid:
		// The provider is slow or unreachable (or, with a backend, the
		// store); the token is still valid: use it.
		if errors.Is(err, errRefreshPending) {
			m.d.Logger.Debug("idp: session refresh under way; the current access token is used", "sub", s.Sub)
		} else {
			m.d.Logger.Warn("idp: session refresh failed; the current access token is used until it expires", "error", err)
		}
		return s.Access, cookies, nil
	case errors.Is(err, idperr.ErrSessionStoreUnavailable):
		return "", nil, err
	}
	return "", nil, fmt.Errorf("%w: %w: %w", idperr.ErrUnavailable, ErrRefreshUnavailable, err)
}

// margin is how long before its exp s's access token is refreshed, in
// seconds: RefreshMargin, but at most half the token's lifetime, so that
// a provider whose tokens live no longer than the margin (30 s tokens and
// the 1 m default) does not get a refresh on every request.
func (m *Manager) margin(s *Session) int64 {
	margin := int64(m.cfg.RefreshMargin / time.Second)
	if s.AccessIat > 0 && s.AccessExp > s.AccessIat {
		margin = min(margin, (s.AccessExp-s.AccessIat)/2)
	}
	return margin
}

// load opens the session of a cookie's chunks. replace is set when the
// cookie store's value was superseded by a refresh on this process.
func (m *Manager) load(ctx context.Context, parts []string, now time.Time) (s *Session, replace string, err error) {
	var value string
	if m.backend != nil {
		value = strings.Join(parts, "")
		if !validSessionID(value) || m.signedOut(value) {
			return nil, "", ErrEnded
		}
		b, err := m.backend.Get(ctx, sessionKey(value))
		switch {
		case errors.Is(err, ErrNotFound):
			m.storeAnswered()
			return nil, "", ErrEnded
		case err != nil:
			m.d.Logger.Warn("idp: session store unavailable", "error", err)
			return nil, "", fmt.Errorf("%w: %w", idperr.ErrSessionStoreUnavailable, err)
		}
		m.storeAnswered()
		if s, err = unmarshalSession(b); err != nil || s.ID != value || s.Scope != m.scope {
			// Another deployment's session in a shared store (or one
			// stored before sessions were bound): not this one's.
			return nil, "", ErrEnded
		}
	} else if e, ok := m.cache.get(parts...); ok {
		s, replace = e.s, e.replace
	} else {
		value = strings.Join(parts, "")
		s = new(Session)
		if err := m.seal.Open(m.cookie, value, now, s); err != nil || s.Access == "" || s.ID == "" {
			return nil, "", ErrEnded
		}
		m.cache.put(value, openedEntry{s: s}, now)
	}
	if now.Unix() >= s.Expires {
		return nil, "", ErrEnded
	}
	if m.backend == nil && m.revoked.revoked(s, now.Unix()) {
		m.cache.drop(strings.Join(parts, ""))
		return nil, "", ErrEnded
	}
	return s, replace, nil
}

// Create starts a session for freshly verified tokens (at, the access
// token's times; sub, its subject; sid, the ID token's provider session)
// and returns the cookies that carry it.
func (m *Manager) Create(ctx context.Context, r *http.Request, tok *oauth2.Token, idToken, sub, sid string, at Times) ([]*http.Cookie, error) {
	now := m.d.Now()
	s := &Session{
		ID: newSessionID(), Access: tok.AccessToken, Refresh: tok.RefreshToken, IDToken: idToken,
		Sub: sub, SID: sid, Created: now.Unix(), Expires: now.Add(m.cfg.MaxAge).Unix(),
		AccessExp: at.Exp, AccessIat: at.issuedAt(),
	}
	if m.backend != nil {
		s.Scope = m.scope // the cookie store binds it in the seal instead
		if err := m.store(ctx, s); err != nil {
			return nil, err
		}
	}
	return m.cookies(r, s)
}

// store writes a backend session and indexes it for back-channel logout.
func (m *Manager) store(ctx context.Context, s *Session) error {
	b, err := marshalSession(s)
	if err != nil {
		return err
	}
	ttl := time.Until(time.Unix(s.Expires, 0))
	if ttl <= 0 {
		return ErrEnded
	}
	if err := m.backend.Set(ctx, sessionKey(s.ID), b, ttl); err != nil {
		return fmt.Errorf("%w: %w", idperr.ErrSessionStoreUnavailable, err)
	}
	if s.SID != "" {
		if err := m.backend.AddToSet(ctx, sessionBySID(s.SID), s.ID, m.cfg.MaxAge); err != nil {
			return fmt.Errorf("%w: %w", idperr.ErrSessionStoreUnavailable, err)
		}
	}
	if err := m.backend.AddToSet(ctx, sessionBySub(s.Sub), s.ID, m.cfg.MaxAge); err != nil {
		return fmt.Errorf("%w: %w", idperr.ErrSessionStoreUnavailable, err)
	}
	return nil
}

// sealSession seals a cookie-store session.
func (m *Manager) sealSession(s *Session) (string, error) {
	v, err := m.seal.Seal(m.cookie, s, time.Unix(s.Expires, 0))
	if err != nil {
		return "", err
	}
	if len(v) > maxCookieChunks*cookieChunk {
		return "", fmt.Errorf("idp: the session's tokens take %d bytes, more than %d cookies can carry: use a session backend", len(v), maxCookieChunks)
	}
	return v, nil
}

// cookies returns the cookies that carry s, and the deletion of chunks a
// shorter value no longer needs.
func (m *Manager) cookies(r *http.Request, s *Session) ([]*http.Cookie, error) {
	if m.backend != nil {
		return m.valueCookies(r, s.ID), nil
	}
	v, err := m.sealSession(s)
	if err != nil {
		return nil, err
	}
	return m.valueCookies(r, v), nil
}

// valueCookies splits value into the session cookie's chunks.
func (m *Manager) valueCookies(r *http.Request, value string) []*http.Cookie {
	var out []*http.Cookie
	maxAge := int(m.cfg.MaxAge / time.Second)
	i := 0
	for ; value != ""; i++ {
		n := min(len(value), cookieChunk)
		out = append(out, m.cookieOf(chunkName(m.cookie, i), value[:n], maxAge))
		value = value[n:]
	}
	for ; i < maxCookieChunks; i++ {
		if name := chunkName(m.cookie, i); r != nil && len(r.CookiesNamed(name)) > 0 {
			out = append(out, m.cookieOf(name, "", -1))
		}
	}
	return out
}

// ClearCookies deletes every chunk of the session cookie r carries (the
// first always).
func (m *Manager) ClearCookies(r *http.Request) []*http.Cookie {
	out := []*http.Cookie{m.cookieOf(m.cookie, "", -1)}
	for i := 1; i < maxCookieChunks; i++ {
		if name := chunkName(m.cookie, i); len(r.CookiesNamed(name)) > 0 {
			out = append(out, m.cookieOf(name, "", -1))
		}
	}
	return out
}

func (m *Manager) cookieOf(name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/", Domain: m.domain, MaxAge: maxAge,
		HttpOnly: true, Secure: m.secure, SameSite: http.SameSiteLaxMode}
}

// End removes r's session (logout) and returns it, if there was one, with
// the cookies that delete it. When the session store fails, the cookies
// are returned all the same (the sign-out holds in this browser), the
// deletion is retried in the background until the store answers (see
// deleteLater), and the error wraps idperr.ErrSessionStoreUnavailable; s is set
// when the session could be read before the store failed.
func (m *Manager) End(ctx context.Context, r *http.Request) (*Session, []*http.Cookie, error) {
	clear := m.ClearCookies(r)
	parts, err := cookieParts(r, m.cookie)
	if err != nil || len(parts) == 0 {
		return nil, clear, nil
	}
	value := strings.Join(parts, "")
	s, _, err := m.load(ctx, parts, m.d.Now())
	if errors.Is(err, idperr.ErrSessionStoreUnavailable) {
		m.deleteLater(value, false)
		return nil, clear, err
	}
	if err != nil {
		return nil, clear, nil
	}
	if m.backend != nil {
		if err := m.backend.Delete(ctx, sessionKey(s.ID)); err != nil {
			m.deleteLater(s.ID, true) // the route ends it at the provider now
			return s, clear, fmt.Errorf("%w: %w", idperr.ErrSessionStoreUnavailable, err)
		}
	} else {
		m.cache.drop(value)
		// A copy of the cookie must not outlive the logout on this process.
		m.revoked.revokeID(s.ID, s.Expires)
	}
	return s, clear, nil
}

// UseLoginState marks a login state as completed, in the backend when
// there is one (so that a login is completed once across replicas).
func (m *Manager) UseLoginState(ctx context.Context, state string, exp time.Time) (bool, error) {
	ok, err := m.backend.SetNX(ctx, usedStateKey(state), []byte("1"), time.Until(exp))
	if err != nil {
		return false, fmt.Errorf("%w: %w", idperr.ErrSessionStoreUnavailable, err)
	}
	return ok, nil
}

// issuedAt is the access token's iat, or the time it was verified when it
// has none (the lifetime then counts from now).
func (t Times) issuedAt() int64 {
	if t.Iat != 0 {
		return t.Iat
	}
	return time.Now().Unix()
}
