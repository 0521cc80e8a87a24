package idp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/oauth2"
)

// sessionManager keeps the browser sessions of a plugin: it reads them
// from requests, refreshes their tokens and writes their cookies.
type sessionManager struct {
	p       *Plugin
	cfg     SessionConfig
	seal    *sealer
	backend SessionBackend // nil: the cookie store
	cache   *openedCache   // cookie store only
	revoked revocations    // cookie store: back-channel logouts
	secure  bool           // https: Secure cookies with the __Host- prefix
	domain  string         // SessionConfig.CookieDomain: a __Secure- cookie with this Domain
	cookie  string         // the cookie's full name

	mu      sync.Mutex
	flights map[flightKey]*refreshFlight // in-process single flight
	pending pendingDeletions             // sign-outs the session store missed

	// beforeRefresh, when set (tests only), runs between reading a
	// session and refreshing it.
	beforeRefresh func()
}

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
	done chan struct{}
	s    *session
	err  error
}

// errSessionEnded: the session is over (refresh refused, revoked, expired,
// unreadable); the request goes on as one without a session.
var errSessionEnded = errors.New("idp: session ended")

func newSessionManager(p *Plugin, cfg SessionConfig, secure bool) (*sessionManager, error) {
	seal, err := newSealer(p.cfg.SessionSecret, "session", cfg.PreviousSecrets...)
	if err != nil {
		return nil, err
	}
	seal.max = maxCookieChunks * cookieChunk
	m := &sessionManager{p: p, cfg: cfg, seal: seal, backend: cfg.Backend, secure: secure,
		cookie: cfg.CookieName, flights: map[flightKey]*refreshFlight{}}
	switch {
	case cfg.CookieDomain != "":
		// Validated: RedirectURI is https.
		m.domain, m.secure = cfg.CookieDomain, true
		m.cookie = "__Secure-" + cfg.CookieName
	case secure:
		m.cookie = "__Host-" + cfg.CookieName
	}
	if m.backend == nil {
		m.cache = newOpenedCache(cfg.CacheSize)
	}
	return m, nil
}

// cookieNames lists every name the session cookie may take (chunks too).
func (m *sessionManager) cookieNames() []string {
	names := make([]string, 0, maxCookieChunks)
	for i := range maxCookieChunks {
		names = append(names, chunkName(m.cookie, i))
	}
	return names
}

// token returns the access token of r's session, refreshed when it is
// about to expire, and the cookies the answer must set (a refreshed
// cookie-store session, or the deletion of an ended session). It fails
// with ErrNoToken (no usable session) or ErrUnavailable (the backend or
// the provider cannot be reached and the token has expired).
func (m *sessionManager) token(r *http.Request) (string, []*http.Cookie, error) {
	parts, err := sessionCookieParts(r, m.cookie)
	if len(parts) == 0 && err == nil {
		return "", nil, ErrNoToken
	}
	if m.p.cop.Check(r) != nil {
		// A cross-origin unsafe request carries the cookie on its own: no
		// credential (as with the token cookie).
		return "", nil, ErrNoToken
	}
	if err != nil {
		return "", m.clearCookies(r), ErrNoToken
	}
	ctx := r.Context()
	now := m.p.cfg.Now()
	s, replace, err := m.load(ctx, parts, now)
	switch {
	case errors.Is(err, ErrUnavailable):
		return "", nil, err
	case err != nil:
		return "", m.clearCookies(r), ErrNoToken
	}
	var cookies []*http.Cookie
	if replace != "" {
		cookies = m.valueCookies(r, replace)
	}
	if s.AccessExp-now.Unix() > m.margin(s) {
		return s.Access, cookies, nil
	}
	if m.beforeRefresh != nil {
		m.beforeRefresh()
	}
	ns, err := m.refresh(ctx, s, strings.Join(parts, ""))
	switch {
	case err == nil:
		if m.backend == nil {
			if cookies, err = m.cookies(r, ns); err != nil {
				return "", nil, err
			}
		}
		return ns.Access, cookies, nil
	case errors.Is(err, errSessionEnded):
		m.p.cfg.Logger.Info("idp: session ended: the provider refused its refresh", "sub", s.Sub)
		return "", m.clearCookies(r), ErrNoToken
	case errors.Is(err, errRefreshPending):
		// The provider is slow; the token is still valid: use it.
		m.p.cfg.Logger.Debug("idp: session refresh under way; the current access token is used", "sub", s.Sub)
		return s.Access, cookies, nil
	case now.Unix() < s.AccessExp:
		// The provider is unreachable; the token is still valid: use it.
		m.p.cfg.Logger.Warn("idp: session refresh failed; the current access token is used until it expires", "error", err)
		return s.Access, cookies, nil
	}
	if errors.Is(err, ErrSessionStoreUnavailable) {
		return "", nil, err
	}
	return "", nil, fmt.Errorf("%w: session refresh: %w", ErrUnavailable, err)
}

// margin is how long before its exp s's access token is refreshed, in
// seconds: RefreshMargin, but at most half the token's lifetime, so that
// a provider whose tokens live no longer than the margin (30 s tokens and
// the 1 m default) does not get a refresh on every request.
func (m *sessionManager) margin(s *session) int64 {
	margin := int64(m.cfg.RefreshMargin / time.Second)
	if s.AccessIat > 0 && s.AccessExp > s.AccessIat {
		margin = min(margin, (s.AccessExp-s.AccessIat)/2)
	}
	return margin
}

// load opens the session of a cookie's chunks. replace is set when the
// cookie store's value was superseded by a refresh on this process.
func (m *sessionManager) load(ctx context.Context, parts []string, now time.Time) (s *session, replace string, err error) {
	var value string
	if m.backend != nil {
		value = strings.Join(parts, "")
		if !validSessionID(value) {
			return nil, "", errSessionEnded
		}
		b, err := m.backend.Get(ctx, sessionKey(value))
		switch {
		case errors.Is(err, ErrSessionNotFound):
			return nil, "", errSessionEnded
		case err != nil:
			m.p.cfg.Logger.Warn("idp: session store unavailable", "error", err)
			return nil, "", fmt.Errorf("%w: %w", ErrSessionStoreUnavailable, err)
		}
		if s, err = unmarshalSession(b); err != nil || s.ID != value {
			return nil, "", errSessionEnded
		}
	} else if e, ok := m.cache.get(parts...); ok {
		s, replace = e.s, e.replace
	} else {
		value = strings.Join(parts, "")
		s = new(session)
		if err := m.seal.open(m.cookie, value, now, s); err != nil || s.Access == "" || s.ID == "" {
			return nil, "", errSessionEnded
		}
		m.cache.put(value, openedEntry{s: s}, now)
	}
	if now.Unix() >= s.Expires {
		return nil, "", errSessionEnded
	}
	if m.backend == nil && m.revoked.revoked(s, now.Unix()) {
		m.cache.drop(strings.Join(parts, ""))
		return nil, "", errSessionEnded
	}
	return s, replace, nil
}

// refresh renews s's tokens once per session: concurrent requests of one
// process share one call, and with a backend one replica refreshes while
// the others wait for its result. value is the presented cookie value.
func (m *sessionManager) refresh(ctx context.Context, s *session, value string) (*session, error) {
	if s.Refresh == "" {
		if m.p.cfg.Now().Unix() < s.AccessExp {
			return s, nil
		}
		return nil, errSessionEnded
	}
	key := flightKey{s.ID, s.Refresh}
	m.mu.Lock()
	f, ok := m.flights[key]
	if !ok {
		f = &refreshFlight{done: make(chan struct{})}
		m.flights[key] = f
		// The flight outlives the request that started it (cancelled, or
		// gone on with its current token): the others wait on it.
		go m.runRefresh(context.WithoutCancel(ctx), f, key, s, value)
	}
	m.mu.Unlock()
	// Only a token that stays valid well past the wait is worth going on
	// with; one about to expire waits for its successor.
	var waited <-chan time.Time
	if w := m.cfg.RefreshWait; w > 0 && time.Unix(s.AccessExp, 0).Sub(m.p.cfg.Now()) > 2*w {
		t := time.NewTimer(m.cfg.RefreshWait)
		defer t.Stop()
		waited = t.C
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

// errRefreshPending: the session's refresh did not finish within
// SessionConfig.RefreshWait; the request goes on with its current token.
var errRefreshPending = errors.New("idp: the session refresh is still under way")

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
		if _, err := newOIDCKeySet(m.p).VerifySignature(cctx, raw); err == nil {
			ns.IDToken = raw
		}
	}
	return &ns, nil
}

// create starts a session for freshly verified tokens and returns the
// cookies that carry it.
func (m *sessionManager) create(ctx context.Context, r *http.Request, tok *oauth2.Token, idToken string, id *Identity, sid string) ([]*http.Cookie, error) {
	now := m.p.cfg.Now()
	s := &session{
		ID: newSessionID(), Access: tok.AccessToken, Refresh: tok.RefreshToken, IDToken: idToken,
		Sub: id.Payload.Subject, SID: sid, Created: now.Unix(), Expires: now.Add(m.cfg.MaxAge).Unix(),
		AccessExp: id.Payload.ExpiresAt.Unix(), AccessIat: issuedAt(id),
	}
	if m.backend != nil {
		if err := m.store(ctx, s); err != nil {
			return nil, err
		}
	}
	return m.cookies(r, s)
}

// store writes a backend session and indexes it for back-channel logout.
func (m *sessionManager) store(ctx context.Context, s *session) error {
	b, err := marshalSession(s)
	if err != nil {
		return err
	}
	ttl := time.Until(time.Unix(s.Expires, 0))
	if ttl <= 0 {
		return errSessionEnded
	}
	if err := m.backend.Set(ctx, sessionKey(s.ID), b, ttl); err != nil {
		return fmt.Errorf("%w: %w", ErrSessionStoreUnavailable, err)
	}
	if s.SID != "" {
		if err := m.backend.AddToSet(ctx, sessionBySID(s.SID), s.ID, m.cfg.MaxAge); err != nil {
			return fmt.Errorf("%w: %w", ErrSessionStoreUnavailable, err)
		}
	}
	if err := m.backend.AddToSet(ctx, sessionBySub(s.Sub), s.ID, m.cfg.MaxAge); err != nil {
		return fmt.Errorf("%w: %w", ErrSessionStoreUnavailable, err)
	}
	return nil
}

// sealSession seals a cookie-store session.
func (m *sessionManager) sealSession(s *session) (string, error) {
	v, err := m.seal.seal(m.cookie, s, time.Unix(s.Expires, 0))
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
func (m *sessionManager) cookies(r *http.Request, s *session) ([]*http.Cookie, error) {
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
func (m *sessionManager) valueCookies(r *http.Request, value string) []*http.Cookie {
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

// clearCookies deletes every chunk of the session cookie r carries (the
// first always).
func (m *sessionManager) clearCookies(r *http.Request) []*http.Cookie {
	out := []*http.Cookie{m.cookieOf(m.cookie, "", -1)}
	for i := 1; i < maxCookieChunks; i++ {
		if name := chunkName(m.cookie, i); len(r.CookiesNamed(name)) > 0 {
			out = append(out, m.cookieOf(name, "", -1))
		}
	}
	return out
}

func (m *sessionManager) cookieOf(name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/", Domain: m.domain, MaxAge: maxAge,
		HttpOnly: true, Secure: m.secure, SameSite: http.SameSiteLaxMode}
}

// end removes r's session (logout) and returns it, if there was one, with
// the cookies that delete it. When the session store fails, the cookies
// are returned all the same (the sign-out holds in this browser), the
// deletion is retried in the background until the store answers (see
// deleteLater), and the error wraps ErrSessionStoreUnavailable; s is set
// when the session could be read before the store failed.
func (m *sessionManager) end(ctx context.Context, r *http.Request) (*session, []*http.Cookie, error) {
	clear := m.clearCookies(r)
	parts, err := sessionCookieParts(r, m.cookie)
	if err != nil || len(parts) == 0 {
		return nil, clear, nil
	}
	value := strings.Join(parts, "")
	s, _, err := m.load(ctx, parts, m.p.cfg.Now())
	if errors.Is(err, ErrSessionStoreUnavailable) {
		m.deleteLater(value, false)
		return nil, clear, err
	}
	if err != nil {
		return nil, clear, nil
	}
	if m.backend != nil {
		if err := m.backend.Delete(ctx, sessionKey(s.ID)); err != nil {
			m.deleteLater(s.ID, true) // the route ends it at the provider now
			return s, clear, fmt.Errorf("%w: %w", ErrSessionStoreUnavailable, err)
		}
	} else {
		m.cache.drop(value)
		// A copy of the cookie must not outlive the logout on this process.
		m.revoked.revokeID(s.ID, s.Expires)
	}
	return s, clear, nil
}

// useLoginState marks a login state as completed, in the backend when
// there is one (so that a login is completed once across replicas).
func (m *sessionManager) useLoginState(ctx context.Context, state string, exp time.Time) (bool, error) {
	ok, err := m.backend.SetNX(ctx, usedStateKey(state), []byte("1"), time.Until(exp))
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrSessionStoreUnavailable, err)
	}
	return ok, nil
}

// issuedAt is the access token's iat, or the time it was verified when it
// has none (the lifetime then counts from now).
func issuedAt(id *Identity) int64 {
	if !id.Payload.IssuedAt.IsZero() {
		return id.Payload.IssuedAt.Unix()
	}
	return time.Now().Unix()
}
