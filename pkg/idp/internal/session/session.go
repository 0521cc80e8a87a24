// Package session keeps the browser sessions of package idp's /auth
// routes: it reads them from requests, refreshes their tokens before they
// expire, writes their cookies, and ends them (logout, back-channel
// logout, sign-outs during a store outage). It knows the plugin only
// through Deps, the few things a session needs of it.
package session

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/seal"
)

// Browser sessions.
//
// With idp.Config.Session set, a browser that signs in through the /auth
// routes gets a session: its tokens (access, refresh, ID) are kept sealed
// in a cookie (the default, stateless store) or in a Backend (the cookie
// then holds a random session id), and a request that carries no bearer
// token is judged with the session's access token, refreshed before it
// expires. See idp.SessionConfig.

// Session is what a session holds, sealed in the cookie or stored in the
// backend.
type Session struct {
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
	Scope     string `json:"b,omitempty"` // backend only: the seal.Scope it belongs to
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

// marshalSession and unmarshalSession are the backend's encoding.
func marshalSession(s *Session) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("idp: session: %w", err)
	}
	return b, nil
}

func unmarshalSession(b []byte) (*Session, error) {
	var s Session
	if err := json.Unmarshal(b, &s); err != nil || s.Access == "" || s.ID == "" {
		return nil, seal.ErrInvalid
	}
	return &s, nil
}

// cookieParts reads the chunks of the cookie named base (base,
// base_1, ... in order) from r's Cookie headers in one pass, without
// copying them: none when there is no such cookie, seal.ErrInvalid when a chunk
// is named twice, a chunk is missing in the middle, or there are too many.
func cookieParts(r *http.Request, base string) ([]string, error) {
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
						return nil, seal.ErrInvalid // a chunk beyond the limit
					}
					continue // another cookie whose name starts alike
				}
				i = int(rest[1] - '0')
			}
			if parts[i] != "" || val == "" {
				return nil, seal.ErrInvalid
			}
			parts[i] = val
			n = max(n, i+1)
		}
	}
	for i := range n {
		if parts[i] == "" {
			return nil, seal.ErrInvalid
		}
	}
	return parts[:n:n], nil
}
