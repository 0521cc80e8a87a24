package config

import (
	"crypto/x509"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/acme/autocert"
)

// ACME is the tls.acme section: certificates obtained and renewed by ACME
// (golang.org/x/crypto/acme/autocert) for the domains, on when domains is
// set. See README, "Automatic certificates".
type ACME struct {
	// Domains are the names to obtain certificates for; each must be a
	// host of upstreams (with the single upstream.url, any name). [none]
	Domains []string `mapstructure:"domains"`
	// Email is the account's contact, for the CA's expiry notices. [""]
	Email string `mapstructure:"email"`
	// DirectoryURL is the CA's ACME directory (https).
	// [Let's Encrypt's production directory]
	DirectoryURL string `mapstructure:"directory_url"`
	// DirectoryCAFile holds PEM roots to trust for directory_url, for a
	// private CA (step-ca, Pebble). [system roots]
	DirectoryCAFile string `mapstructure:"directory_ca_file"`
	// Cache is where the account key and certificates are kept: "dir"
	// (cache_dir) or "redis" (session.redis_url, keys prefixed with
	// session.redis_prefix + "acme:", shared by the replicas). ["dir"]
	Cache string `mapstructure:"cache"`
	// CacheDir is the directory of cache "dir" (created 0700). [""]
	CacheDir string `mapstructure:"cache_dir"`
	// HTTPListen, when set, is a plain-HTTP listener (":80", or the
	// address port 80 is forwarded to) that answers HTTP-01 challenges
	// and redirects everything else to https; TLS-ALPN-01 on listen
	// is always offered. [""]
	HTTPListen string `mapstructure:"http_listen"`
	// RenewBefore is how long before expiry certificates are renewed, at
	// most 720h. [0: a third of their lifetime, at most 720h]
	RenewBefore time.Duration `mapstructure:"renew_before"`
}

// DefaultACMEDirectory is Let's Encrypt's production directory.
const DefaultACMEDirectory = autocert.DefaultACMEDirectory

// ACME caches.
const (
	ACMECacheDir   = "dir"
	ACMECacheRedis = "redis"
)

// maxRenewBefore is autocert's cap on RenewBefore.
const maxRenewBefore = 720 * time.Hour

// Enabled reports whether certificates are obtained by ACME.
func (a ACME) Enabled() bool { return len(a.Domains) > 0 }

// configured reports whether any tls.acme key but domains departs from
// its default.
func (a ACME) configured() bool {
	return a.Email != "" || a.DirectoryCAFile != "" || a.CacheDir != "" || a.HTTPListen != "" ||
		a.RenewBefore != 0 || a.Cache == ACMECacheRedis ||
		(a.DirectoryURL != "" && a.DirectoryURL != DefaultACMEDirectory)
}

// validateACME reports the problems of tls.acme, each naming its keys.
func (f File) validateACME(bad, missing func([]string, string, ...any)) {
	a := f.TLS.ACME
	if !a.Enabled() {
		if a.configured() {
			missing(keys("tls.acme.domains"), "tls.acme.domains is required when tls.acme is configured (the names to obtain certificates for)")
		}
		return
	}
	if f.TLS.CertFile != "" || f.TLS.KeyFile != "" {
		bad(keys("tls.acme.domains", "tls.cert_file", "tls.key_file"),
			"tls.acme and tls.cert_file/tls.key_file are exclusive: serve the certificate files, or obtain certificates by ACME, not both")
	}
	hosts := f.upstreamHosts()
	seen := map[string]int{}
	for i, d := range a.Domains {
		k := fmt.Sprintf("tls.acme.domains[%d]", i)
		name := strings.ToLower(d)
		if reason := acmeDomainProblem(name); reason != "" {
			bad(keys(k), "%s %q: %s", k, d, reason)
			continue
		}
		if j, dup := seen[name]; dup {
			bad(keys(k), "%s %q: the same name as tls.acme.domains[%d]", k, d, j)
			continue
		}
		seen[name] = i
		if hosts != nil && !slices.Contains(hosts, name) {
			bad(keys(k), "%s %q is not a host of upstreams (%s): the proxy would refuse its requests with 421; add an upstream for it or remove it", k, d, strings.Join(hosts, ", "))
		}
	}
	if a.Email != "" {
		if addr, err := mail.ParseAddress(a.Email); err != nil || addr.Address != a.Email {
			bad(keys("tls.acme.email"), "tls.acme.email %q: want a bare e-mail address (ops@example.com)", a.Email)
		}
	}
	if u, err := url.Parse(a.DirectoryURL); err != nil || u.Scheme != "https" || u.Host == "" {
		bad(keys("tls.acme.directory_url"), "tls.acme.directory_url %q: want the CA's https directory URL", a.DirectoryURL)
	}
	if a.DirectoryCAFile != "" {
		// Read here as upstream.ca_file is: check-config finds a missing
		// or empty file before serve does.
		if b, err := os.ReadFile(a.DirectoryCAFile); err != nil {
			bad(keys("tls.acme.directory_ca_file"), "tls.acme.directory_ca_file: %v", err)
		} else if !x509.NewCertPool().AppendCertsFromPEM(b) {
			bad(keys("tls.acme.directory_ca_file"), "tls.acme.directory_ca_file %s holds no PEM certificate", a.DirectoryCAFile)
		}
	}
	switch a.Cache {
	case ACMECacheDir:
		if a.CacheDir == "" {
			missing(keys("tls.acme.cache_dir"), "tls.acme.cache_dir is required with tls.acme.cache: dir (a persistent directory: without it every restart orders new certificates)")
		}
	case ACMECacheRedis:
		if a.CacheDir != "" {
			bad(keys("tls.acme.cache_dir", "tls.acme.cache"), "tls.acme.cache_dir is for tls.acme.cache: dir, not redis")
		}
		switch {
		case f.Session.RedisURL == "":
			missing(keys("session.redis_url"), "tls.acme.cache: redis needs session.redis_url (the Redis the replicas share)")
		case f.Session.Enabled && f.Session.Store == StoreRedis:
			// checked with the session section
		default:
			if _, err := redis.ParseURL(f.Session.RedisURL); err != nil {
				bad(keys("session.redis_url"), "session.redis_url (for tls.acme.cache: redis): %v", err)
			}
		}
	default:
		bad(keys("tls.acme.cache"), "tls.acme.cache %q: want dir or redis", a.Cache)
	}
	if a.HTTPListen != "" {
		if err := checkAddr(a.HTTPListen); err != nil {
			bad(keys("tls.acme.http_listen"), "tls.acme.http_listen %q: %v, or \"\" for TLS-ALPN-01 only", a.HTTPListen, err)
		} else if a.HTTPListen == f.Listen || a.HTTPListen == f.MetricsListen {
			bad(keys("tls.acme.http_listen"), "tls.acme.http_listen %q must differ from listen and metrics_listen", a.HTTPListen)
		}
	}
	if a.RenewBefore < 0 || a.RenewBefore > maxRenewBefore {
		bad(keys("tls.acme.renew_before"), "tls.acme.renew_before %s: want 0 (a third of the lifetime) up to 720h", a.RenewBefore)
	}
}

// upstreamHosts returns the hosts of upstreams, sorted, lower case; nil
// with the single upstream.url, which serves every host.
func (f File) upstreamHosts() []string {
	if len(f.Upstreams) == 0 {
		return nil
	}
	set := map[string]bool{}
	for _, u := range f.Upstreams {
		if i := strings.IndexByte(u.Match, '/'); i > 0 {
			set[strings.ToLower(u.Match[:i])] = true
		}
	}
	out := make([]string, 0, len(set))
	for h := range set {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// acmeDomainProblem says why name cannot get a certificate by TLS-ALPN-01
// or HTTP-01, or "".
func acmeDomainProblem(name string) string {
	switch {
	case strings.ContainsAny(name, "*"):
		return "wildcard names need the DNS-01 challenge, which autocert does not do"
	case net.ParseIP(strings.Trim(name, "[]")) != nil:
		return "an IP address, not a DNS name"
	case strings.Contains(name, ":"):
		return "a DNS name without a port"
	case strings.HasSuffix(name, "."):
		return "a DNS name without the trailing dot"
	case !strings.Contains(name, "."):
		return "a single-label name, which no public CA certifies"
	case len(name) > 253:
		return "longer than 253 characters"
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "not a DNS name (empty, over-long or hyphen-edged label)"
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return "not a DNS name (letters, digits and hyphens only; write an internationalized name in its xn-- form)"
			}
		}
	}
	return ""
}
