package idp

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Browser sessions.
//
// With Config.Session set, a browser that signs in through the /auth
// routes gets a session: its tokens (access, refresh, ID) are kept sealed
// in a cookie (the default, stateless store) or in a SessionBackend (the
// cookie then holds a random session id), and a request that carries no
// bearer token is judged with the session's access token, refreshed
// before it expires. See SessionConfig.

// Session defaults.
const (
	DefaultSessionCookie        = "idp_session"
	DefaultSessionMaxAge        = 12 * time.Hour
	DefaultSessionRefreshMargin = time.Minute
	DefaultSessionCacheSize     = 10000
)

// SessionConfig turns on browser sessions (Config.Session). Zero fields
// take the documented defaults.
type SessionConfig struct {
	// Backend keeps the sessions server-side (several replicas, immediate
	// back-channel logout everywhere, single-use logins across replicas):
	// the cookie then holds only a random session id. nil: the cookie
	// store, where the tokens are sealed (AES-256-GCM, key derived from
	// Config.SessionSecret) into the cookie itself, split into chunks when
	// over 3,800 bytes.
	Backend SessionBackend
	// CookieName names the session cookie (and its chunks NAME_1, NAME_2,
	// ...). Over https it is prefixed "__Host-" (Secure, Path=/, no
	// Domain): no sibling subdomain can set it. [idp_session]
	CookieName string
	// MaxAge is a session's absolute lifetime, whatever its refreshes; the
	// provider's own session and refresh-token lifetimes apply as well.
	// [12h]
	MaxAge time.Duration
	// RefreshMargin: an access token that expires within the margin is
	// refreshed (once per session, also under concurrent requests) before
	// the request is judged. [1m]
	RefreshMargin time.Duration
	// PostLogoutRedirectURI is where the provider sends the browser after
	// a logout through its end_session_endpoint (it must be registered at
	// the provider). "" leaves it to the provider. [""]
	PostLogoutRedirectURI string
	// PreviousSecrets are former SessionSecret values: cookies sealed with
	// them still open (key rotation), new ones are sealed with
	// SessionSecret. [none]
	PreviousSecrets [][]byte
	// CacheSize bounds the cookie store's cache of opened sessions, which
	// spares a request the decryption. Negative disables it. [10000]
	CacheSize int
}

func (c SessionConfig) withDefaults() SessionConfig {
	if c.CookieName == "" {
		c.CookieName = DefaultSessionCookie
	}
	if c.MaxAge == 0 {
		c.MaxAge = DefaultSessionMaxAge
	}
	if c.RefreshMargin == 0 {
		c.RefreshMargin = DefaultSessionRefreshMargin
	}
	if c.CacheSize == 0 {
		c.CacheSize = DefaultSessionCacheSize
	}
	return c
}

func (c SessionConfig) validate(bad func(string, ...any)) {
	if !validCookieName(c.CookieName) || strings.HasPrefix(c.CookieName, "__") {
		bad("session cookie name %q: want a cookie token without a __ prefix (the __Host- prefix is added on https)", c.CookieName)
	}
	if c.MaxAge < time.Minute {
		bad("session max age %s: want at least 1m", c.MaxAge)
	}
	if c.RefreshMargin < 0 || c.RefreshMargin >= c.MaxAge {
		bad("session refresh margin %s: want 0 or more and less than the max age", c.RefreshMargin)
	}
	for i, s := range c.PreviousSecrets {
		if len(s) < 32 {
			bad("previous session secret %d: at least 32 bytes", i+1)
		}
	}
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

// ErrSessionNotFound is returned by SessionBackend.Get for an absent key.
var ErrSessionNotFound = errors.New("idp: session not found")

// session is what a session holds, sealed in the cookie or stored in the
// backend.
type session struct {
	ID        string `json:"i"` // random; the backend key, the refresh group
	Access    string `json:"a"`
	Refresh   string `json:"r,omitempty"`
	IDToken   string `json:"t,omitempty"`
	Sub       string `json:"u"`
	SID       string `json:"s,omitempty"` // the provider's session (back-channel logout)
	Created   int64  `json:"c"`
	Expires   int64  `json:"x"` // absolute end
	AccessExp int64  `json:"e"`
	AccessIat int64  `json:"n,omitempty"` // its lifetime bounds the refresh margin
}

func newSessionID() string { return rand.Text() + rand.Text() } // 2×128 bits

// validSessionID accepts what newSessionID makes (base32, 52 characters).
func validSessionID(s string) bool {
	if len(s) != 52 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || '2' <= c && c <= '7') {
			return false
		}
	}
	return true
}

// Backend keys.
func sessionKey(id string) string      { return "idp:session:" + id }
func sessionLockKey(id string) string  { return "idp:session-refresh:" + id }
func sessionBySID(sid string) string   { return "idp:sessions-by-sid:" + sid }
func sessionBySub(sub string) string   { return "idp:sessions-by-sub:" + sub }
func usedStateKey(state string) string { return "idp:used-login-state:" + state }
func usedLogoutKey(jti string) string  { return "idp:used-logout-token:" + jti }
func chunkName(base string, i int) string {
	if i == 0 {
		return base
	}
	return base + "_" + strconv.Itoa(i)
}

// Cookie chunking: browsers keep at least 4,096 bytes per cookie, name and
// attributes included.
const (
	cookieChunk     = 3800
	maxCookieChunks = 4
)

// openedCache remembers opened cookie-store sessions by a keyed 128-bit
// hash of the cookie value, so that a request with a known cookie skips
// the decryption. An entry may point a cookie superseded by a refresh to
// the refreshed session and its new cookie value. It is not a
// directmap.Table like the other look-up tables: it keeps no cookie to
// compare, and evicts expired sessions first (see package directmap).
type openedCache struct {
	max    int
	s1, s2 maphash.Seed

	mu      sync.Mutex
	entries map[[2]uint64]openedEntry
}

type openedEntry struct {
	s       *session
	replace string // the cookie value that supersedes the presented one, if any
}

func newOpenedCache(max int) *openedCache {
	if max <= 0 {
		return nil
	}
	return &openedCache{max: max, s1: maphash.MakeSeed(), s2: maphash.MakeSeed(), entries: map[[2]uint64]openedEntry{}}
}

// key hashes the concatenation of parts (a cookie's chunks) without
// building it.
func (c *openedCache) key(parts ...string) [2]uint64 {
	var h1, h2 maphash.Hash
	h1.SetSeed(c.s1)
	h2.SetSeed(c.s2)
	for _, p := range parts {
		_, _ = h1.WriteString(p)
		_, _ = h2.WriteString(p)
	}
	return [2]uint64{h1.Sum64(), h2.Sum64()}
}

func (c *openedCache) get(parts ...string) (openedEntry, bool) {
	if c == nil {
		return openedEntry{}, false
	}
	k := c.key(parts...)
	c.mu.Lock()
	e, ok := c.entries[k]
	c.mu.Unlock()
	return e, ok
}

func (c *openedCache) put(v string, e openedEntry, now time.Time) {
	if c == nil {
		return
	}
	k := c.key(v)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		// Expired sessions first, then arbitrary ones (map order is
		// random), 1/16 of the cache at a time.
		n := c.max/16 + 1
		for k, old := range c.entries {
			if old.s.Expires <= now.Unix() {
				delete(c.entries, k)
				n--
			}
		}
		for k := range c.entries {
			if n <= 0 {
				break
			}
			delete(c.entries, k)
			n--
		}
	}
	c.entries[k] = e
}

func (c *openedCache) drop(v string) {
	if c == nil {
		return
	}
	k := c.key(v)
	c.mu.Lock()
	delete(c.entries, k)
	c.mu.Unlock()
}

// revocations are the cookie store's record of back-channel logouts: a
// provider session (sid) or a user (sub, for sessions created before the
// logout) whose sessions are over, kept for the sessions' max age.
type revocations struct {
	mu   sync.Mutex
	ids  map[string]int64 // session ID (local logout) -> until
	sids map[string]int64 // provider session -> until
	subs map[string][2]int64
}

func (rv *revocations) revokeID(id string, until int64) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rv.ids == nil {
		rv.ids = map[string]int64{}
	}
	rv.ids[id] = until
}

func (rv *revocations) revokeSID(sid string, until int64) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rv.sids == nil {
		rv.sids = map[string]int64{}
	}
	rv.sids[sid] = until
}

func (rv *revocations) revokeSub(sub string, at, until int64) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rv.subs == nil {
		rv.subs = map[string][2]int64{}
	}
	rv.subs[sub] = [2]int64{at, until}
}

// revoked reports whether s was ended by a back-channel logout; expired
// records are forgotten on the way.
func (rv *revocations) revoked(s *session, now int64) bool {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if len(rv.ids) == 0 && len(rv.sids) == 0 && len(rv.subs) == 0 {
		return false
	}
	if until, ok := rv.ids[s.ID]; ok {
		if now < until {
			return true
		}
		delete(rv.ids, s.ID)
	}
	if until, ok := rv.sids[s.SID]; ok && s.SID != "" {
		if now < until {
			return true
		}
		delete(rv.sids, s.SID)
	}
	if r, ok := rv.subs[s.Sub]; ok {
		if now < r[1] {
			return s.Created <= r[0]
		}
		delete(rv.subs, s.Sub)
	}
	return false
}

// marshalSession and unmarshalSession are the backend's encoding.
func marshalSession(s *session) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("idp: session: %w", err)
	}
	return b, nil
}

func unmarshalSession(b []byte) (*session, error) {
	var s session
	if err := json.Unmarshal(b, &s); err != nil || s.Access == "" || s.ID == "" {
		return nil, errSealed
	}
	return &s, nil
}

// sessionCookieParts reads the chunks of the cookie named base (base,
// base_1, ... in order) from r's Cookie headers in one pass, without
// copying them: none when there is no such cookie, errSealed when a chunk
// is named twice, a chunk is missing in the middle, or there are too many.
func sessionCookieParts(r *http.Request, base string) ([]string, error) {
	var parts [maxCookieChunks]string
	n := 0
	for _, line := range r.Header["Cookie"] {
		if !strings.Contains(line, base) {
			continue
		}
		for pair := range strings.SplitSeq(line, ";") {
			name, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
			name = strings.TrimSpace(name)
			if !ok || !strings.HasPrefix(name, base) {
				continue
			}
			i := 0
			if rest := name[len(base):]; rest != "" {
				if len(rest) != 2 || rest[0] != '_' || rest[1] < '1' || rest[1] > '0'+maxCookieChunks-1 {
					if len(rest) >= 2 && rest[0] == '_' && rest[1] >= '0' && rest[1] <= '9' {
						return nil, errSealed // a chunk beyond the limit
					}
					continue // another cookie whose name starts alike
				}
				i = int(rest[1] - '0')
			}
			if parts[i] != "" || val == "" {
				return nil, errSealed
			}
			parts[i] = val
			n = max(n, i+1)
		}
	}
	for i := range n {
		if parts[i] == "" {
			return nil, errSealed
		}
	}
	return parts[:n:n], nil
}

// IsNavigation reports whether r is a browser navigating to a page (as
// opposed to an API call or a script's request): GET or HEAD, Accept
// naming text/html, no Authorization header, and neither Sec-Fetch-Mode
// of a script (cors, no-cors, same-origin) nor X-Requested-With. With
// browser sessions, such a request without credentials is sent to the
// login route; every other one gets 401.
func IsNavigation(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	h := r.Header
	if _, ok := h["Authorization"]; ok || h.Get("X-Requested-With") != "" {
		return false
	}
	switch h.Get("Sec-Fetch-Mode") {
	case "", "navigate", "nested-navigate":
	default:
		return false
	}
	for _, a := range h.Values("Accept") {
		for part := range strings.SplitSeq(a, ",") {
			mt, _, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(mt), "text/html") {
				return true
			}
		}
	}
	return false
}

// redirectToLogin sends a browser to the login route, to come back to the
// page it asked for (when that is a safe return-to target, else "/").
func (p *Plugin) redirectToLogin(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, p.LoginURL(r.URL.RequestURI()), http.StatusFound)
}

// LoginURL returns the site-relative URL of the login route that brings
// the browser back to returnTo (a path with an optional query; "/" when
// it is not a safe return-to target): "/auth/login?return_to=%2Fpage".
func (p *Plugin) LoginURL(returnTo string) string {
	if _, ok := safeReturnTo(returnTo); !ok {
		returnTo = "/"
	}
	return strings.TrimSuffix(p.cfg.AuthPrefix, "/") + "/login?return_to=" + url.QueryEscape(returnTo)
}

// SessionCookieNames lists the names the session cookie may take (its
// chunks included), or none without Config.Session. They carry
// credentials: a proxy removes them from what it forwards.
func (p *Plugin) SessionCookieNames() []string {
	if p.sessions == nil {
		return nil
	}
	return p.sessions.cookieNames()
}

// NewMemoryBackend returns a SessionBackend that keeps everything in this
// process's memory: for a single replica and for tests. Sessions do not
// survive a restart; use a shared backend (pkg/idp/redisstore) for
// several replicas.
func NewMemoryBackend() SessionBackend {
	return &memoryBackend{vals: map[string]memoryValue{}, sets: map[string]memorySet{}}
}

type memoryValue struct {
	b   []byte
	exp time.Time
}

type memorySet struct {
	members map[string]struct{}
	exp     time.Time
}

type memoryBackend struct {
	mu   sync.Mutex
	vals map[string]memoryValue
	sets map[string]memorySet
}

func (m *memoryBackend) Get(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.vals[key]
	if !ok || !time.Now().Before(v.exp) {
		delete(m.vals, key)
		return nil, ErrSessionNotFound
	}
	return append([]byte(nil), v.b...), nil
}

func (m *memoryBackend) Set(_ context.Context, key string, value []byte, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked()
	m.vals[key] = memoryValue{b: append([]byte(nil), value...), exp: time.Now().Add(ttl)}
	return nil
}

func (m *memoryBackend) SetNX(_ context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.vals[key]; ok && time.Now().Before(v.exp) {
		return false, nil
	}
	m.vals[key] = memoryValue{b: append([]byte(nil), value...), exp: time.Now().Add(ttl)}
	return true, nil
}

func (m *memoryBackend) Delete(_ context.Context, keys ...string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		delete(m.vals, k)
		delete(m.sets, k)
	}
	return nil
}

func (m *memoryBackend) AddToSet(_ context.Context, key, member string, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sets[key]
	if !ok || !time.Now().Before(s.exp) {
		s = memorySet{members: map[string]struct{}{}}
	}
	s.members[member] = struct{}{}
	if exp := time.Now().Add(ttl); exp.After(s.exp) {
		s.exp = exp
	}
	m.sets[key] = s
	return nil
}

func (m *memoryBackend) SetMembers(_ context.Context, key string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sets[key]
	if !ok || !time.Now().Before(s.exp) {
		return nil, nil
	}
	out := make([]string, 0, len(s.members))
	for k := range s.members {
		out = append(out, k)
	}
	return out, nil
}

// sweepLocked drops expired values once the map has grown, so that a
// long-running process does not keep every session it ever had.
func (m *memoryBackend) sweepLocked() {
	if len(m.vals) < 1024 || len(m.vals)%1024 != 0 {
		return
	}
	now := time.Now()
	for k, v := range m.vals {
		if !now.Before(v.exp) {
			delete(m.vals, k)
		}
	}
	for k, s := range m.sets {
		if !now.Before(s.exp) {
			delete(m.sets, k)
		}
	}
}
