package cli

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"

	"golang.org/x/crypto/acme/autocert"

	"github.com/idp-proxy/idp-proxy/cmd/idp-proxy/internal/config"
	"github.com/idp-proxy/idp-proxy/internal/acmecert"
)

// acmeCerts are the proxy's certificates by ACME (tls.acme).
type acmeCerts struct {
	tls   *tls.Config  // the proxy listener's: certificates, TLS-ALPN-01
	http  http.Handler // the http_listen listener's: HTTP-01, redirects
	close func()
}

// newACME builds the certificate manager of cfg.TLS.ACME (enabled) and
// its cache: the directory, or the session's Redis under
// session.redis_prefix + "acme:".
func newACME(cfg config.File, minTLS uint16) (*acmeCerts, error) {
	a := cfg.TLS.ACME
	out := &acmeCerts{close: func() {}}
	var cache autocert.Cache
	switch a.Cache {
	case config.ACMECacheRedis:
		rc, err := acmecert.ConnectRedisCache(cfg.Session.RedisURL, cfg.Session.RedisPrefix+"acme:")
		if err != nil {
			return nil, fmt.Errorf("idp-proxy: tls.acme cache: %w", err)
		}
		cache, out.close = rc, func() { _ = rc.Close() }
	default:
		cache = autocert.DirCache(a.CacheDir)
	}
	m, err := acmecert.New(acmecert.Options{
		Domains:         a.Domains,
		Email:           a.Email,
		DirectoryURL:    a.DirectoryURL,
		DirectoryCAFile: a.DirectoryCAFile,
		Cache:           cache,
		RenewBefore:     a.RenewBefore,
	})
	if err != nil {
		out.close()
		return nil, fmt.Errorf("idp-proxy: tls.acme: %w", err)
	}
	out.tls = acmecert.TLSConfig(m, minTLS)
	if a.HTTPListen != "" {
		out.http = acmecert.HTTPHandler(m)
	}
	return out, nil
}

// tlsConfig is the listeners' TLS configuration; nil (the certificate
// files) without ACME.
func (a *acmeCerts) tlsConfig() *tls.Config {
	if a == nil {
		return nil
	}
	return a.tls
}

// tlsSummary describes the listener's TLS for check-config's output.
func tlsSummary(t config.TLS) string {
	switch {
	case t.ACME.Enabled():
		where := t.ACME.CacheDir
		if t.ACME.Cache == config.ACMECacheRedis {
			where = "redis"
		}
		return fmt.Sprintf(" (https, certificates by ACME for %s from %s, cache %s%s)", strings.Join(t.ACME.Domains, ", "), t.ACME.DirectoryURL, where, clientAuthSummary(t))
	case t.CertFile != "":
		return " (https, " + t.CertFile + clientAuthSummary(t) + ")"
	}
	return ""
}

// clientAuthSummary describes tls.client_auth for tlsSummary.
func clientAuthSummary(t config.TLS) string {
	switch strings.ToLower(t.ClientAuth) {
	case config.ClientAuthRequest, config.ClientAuthRequire:
		return ", client certificates: " + strings.ToLower(t.ClientAuth) + " (CAs " + t.ClientCAFile + ")"
	}
	return ""
}
