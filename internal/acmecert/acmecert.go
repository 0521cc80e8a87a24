// Package acmecert obtains and renews the proxy's certificates by ACME
// (RFC 8555) with golang.org/x/crypto/acme/autocert: TLS-ALPN-01 on the
// TLS listener, HTTP-01 on a plain-HTTP listener when one is configured.
// Certificates are kept in an autocert.Cache: a directory, or Redis
// (RedisCache) so that replicas share them.
package acmecert

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"
)

// Options configure New. Zero values get the defaults in brackets.
type Options struct {
	// Domains are the names certificates are requested for; a TLS
	// handshake for any other name is refused. Required.
	Domains []string
	// Email is the account's contact, for the CA's expiry notices. [none]
	Email string
	// DirectoryURL is the CA's ACME directory.
	// [autocert.DefaultACMEDirectory, Let's Encrypt's production]
	DirectoryURL string
	// DirectoryCAFile holds PEM roots to trust for DirectoryURL, for a
	// private ACME CA (step-ca, Pebble) whose HTTPS certificate the
	// system roots do not cover. [system roots]
	DirectoryCAFile string
	// Cache keeps accounts and certificates across restarts; required
	// (without it every restart would order new certificates and run
	// into the CA's rate limits).
	Cache autocert.Cache
	// RenewBefore is how long before expiry a certificate is renewed;
	// autocert caps it at 30 days and adds up to a tenth of it, at most
	// an hour, of jitter. [a third of the certificate's lifetime, at
	// most 30 days]
	RenewBefore time.Duration
}

// ErrNoDomains and ErrNoCache are New's errors for missing options.
var (
	ErrNoDomains = errors.New("acmecert: no domains")
	ErrNoCache   = errors.New("acmecert: no cache")
)

// New returns the autocert.Manager for o. Serve its TLSConfig's
// GetCertificate on the TLS listener, with ALPNProto among its
// NextProtos (TLS-ALPN-01), and its HTTPHandler on a plain-HTTP
// listener to offer HTTP-01 as well.
//
// Agreeing to the CA's terms of service is implied: configuring ACME is
// asking for certificates on the CA's terms.
func New(o Options) (*autocert.Manager, error) {
	if len(o.Domains) == 0 {
		return nil, ErrNoDomains
	}
	if o.Cache == nil {
		return nil, ErrNoCache
	}
	m := &autocert.Manager{
		Prompt:      autocert.AcceptTOS,
		Cache:       o.Cache,
		HostPolicy:  autocert.HostWhitelist(o.Domains...),
		RenewBefore: o.RenewBefore,
		Email:       o.Email,
	}
	if o.DirectoryURL != "" || o.DirectoryCAFile != "" {
		c := &acme.Client{DirectoryURL: o.DirectoryURL, UserAgent: "idp-proxy"}
		if o.DirectoryCAFile != "" {
			pem, err := os.ReadFile(o.DirectoryCAFile)
			if err != nil {
				return nil, fmt.Errorf("acmecert: directory CA file: %w", err)
			}
			roots := x509.NewCertPool()
			if !roots.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("acmecert: directory CA file %s: no PEM certificate", o.DirectoryCAFile)
			}
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
			c.HTTPClient = &http.Client{Transport: tr, Timeout: 30 * time.Second}
		}
		m.Client = c
	}
	return m, nil
}

// TLSConfig returns m's TLS configuration (certificates on demand, HTTP/2,
// TLS-ALPN-01) with minVersion as the oldest version accepted.
func TLSConfig(m *autocert.Manager, minVersion uint16) *tls.Config {
	c := m.TLSConfig()
	c.MinVersion = minVersion
	return c
}

// HTTPHandler returns m's HTTP-01 handler for a plain-HTTP listener:
// challenge answers under /.well-known/acme-challenge/, and a redirect to
// https (GET, HEAD; 400 otherwise) for everything else. The request's
// host is judged without its port: autocert's host policy would refuse
// "name:8080" (403) when the listener is reached on another port than 80.
func HTTPHandler(m *autocert.Manager) http.Handler {
	h := m.HTTPHandler(nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if host, _, err := net.SplitHostPort(r.Host); err == nil {
			r2 := r.Clone(r.Context())
			r2.Host = host
			r = r2
		}
		h.ServeHTTP(w, r)
	})
}
