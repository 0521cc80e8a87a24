package config

import (
	"bufio"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// Session is the session section: browser sessions for web apps behind
// the proxy (see README, "Protect a web app").
type Session struct {
	// Enabled turns browser sessions on (needs idp.include_routes). [false]
	Enabled bool `mapstructure:"enabled"`
	// Store is where sessions live: cookie (sealed in the browser's
	// cookie, stateless) or redis (shared by replicas). [cookie]
	Store string `mapstructure:"store"`
	// RedisURL locates Redis for store redis:
	// redis://[:password@]host:port/db, rediss:// for TLS. Prefer
	// IDP_PROXY_SESSION_REDIS_URL when it holds a password. [""]
	RedisURL string `mapstructure:"redis_url"`
	// RedisPrefix is put before every Redis key. [""]
	RedisPrefix string `mapstructure:"redis_prefix"`
	// CookieName of the session cookie; "__Host-" is prepended on https.
	// [idp_session]
	CookieName string `mapstructure:"cookie_name"`
	// MaxAge is a session's absolute lifetime. [12h]
	MaxAge time.Duration `mapstructure:"max_age"`
	// RefreshMargin: access tokens that expire within it are refreshed
	// before the request is judged. [1m]
	RefreshMargin time.Duration `mapstructure:"refresh_margin"`
	// RefreshWait bounds how long a request waits for its session's
	// refresh while the current token stays valid (then it goes on with
	// it), and how long other requests wait for a refresh under way
	// (then they are answered at once). [1s]
	RefreshWait time.Duration `mapstructure:"refresh_wait"`
	// PostLogoutRedirectURI is where the provider sends the browser after
	// logout (registered at the provider). [""]
	PostLogoutRedirectURI string `mapstructure:"post_logout_redirect_uri"`
	// CookieDomain shares the session cookie between the hosts of a
	// domain (single sign-on across subdomains): the cookie becomes
	// "__Secure-" with Domain set; needs an https idp.redirect_uri on a
	// host the domain covers. [""]
	CookieDomain string `mapstructure:"cookie_domain"`
	// PreviousSecretsFile holds former idp.session_secret values, one per
	// line, still accepted to open session cookies (key rotation). [""]
	PreviousSecretsFile string `mapstructure:"previous_secrets_file"`
	// DPoPKeyFile is a PEM private key (ECDSA, RSA or Ed25519) the proxy
	// binds its sessions' tokens to (RFC 9449) where the provider
	// advertises DPoP; replicas share it. [""; bearer tokens]
	DPoPKeyFile string `mapstructure:"dpop_key_file"`
	// DPoPAcceptedKeyFiles are more PEM keys whose bound sessions still
	// pass: the previous key after a rotation, the next one before it. [none]
	DPoPAcceptedKeyFiles []string `mapstructure:"dpop_accepted_key_files"`
}

// Session stores.
const (
	StoreCookie = "cookie"
	StoreRedis  = "redis"
)

func (s Session) validate(bad func([]string, string, ...any), missing func([]string, string, ...any)) {
	if !s.Enabled {
		return
	}
	switch s.Store {
	case StoreCookie:
	case StoreRedis:
		if s.RedisURL == "" {
			missing(keys("session.redis_url", "session.store"), "session.redis_url is required with session.store redis")
		} else if _, err := redis.ParseURL(s.RedisURL); err != nil {
			bad(keys("session.redis_url"), "session.redis_url: %v", err)
		}
	default:
		bad(keys("session.store"), "session.store %q: want cookie or redis", s.Store)
	}
}

// sessionConfig is the idp.SessionConfig of the section (nil when
// disabled), without its Backend (serve opens Redis).
func (s Session) sessionConfig(noSecrets bool) (*idp.SessionConfig, error) {
	if !s.Enabled {
		return nil, nil
	}
	sc := &idp.SessionConfig{
		CookieName:            s.CookieName,
		MaxAge:                s.MaxAge,
		RefreshMargin:         s.RefreshMargin,
		RefreshWait:           s.RefreshWait,
		PostLogoutRedirectURI: s.PostLogoutRedirectURI,
	}
	sc.CookieDomain = s.CookieDomain
	if !noSecrets {
		dk, err := s.sessionDPoPKeys() // sessiondpop.go
		if err != nil {
			return nil, err
		}
		sc.DPoPKeys = dk
	}
	if s.PreviousSecretsFile != "" && !noSecrets {
		f, err := os.Open(s.PreviousSecretsFile)
		if err != nil {
			return nil, keyErrorf(keys("session.previous_secrets_file"), "session.previous_secrets_file: %w", err)
		}
		defer f.Close()
		sc2 := bufio.NewScanner(f)
		for sc2.Scan() {
			if line := strings.TrimSpace(sc2.Text()); line != "" {
				sc.PreviousSecrets = append(sc.PreviousSecrets, []byte(line))
			}
		}
		if err := sc2.Err(); err != nil {
			return nil, keyErrorf(keys("session.previous_secrets_file"), "session.previous_secrets_file: %w", err)
		}
	}
	return sc, nil
}
