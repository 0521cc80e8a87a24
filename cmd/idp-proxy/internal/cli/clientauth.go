package cli

import (
	"crypto/tls"
	"crypto/x509"
	"slices"

	"golang.org/x/crypto/acme"
)

// withClientAuth returns the listener's TLS configuration base (nil: the
// certificate files) asking clients for certificates as mode says,
// verified against pool (tls.client_auth, tls.client_ca_file). With ACME
// (base set), the handshakes of TLS-ALPN-01 validation (ALPN acme-tls/1),
// which the CA makes without a client certificate, get base itself, so
// that client_auth require does not stop certificate renewal.
func withClientAuth(base *tls.Config, mode tls.ClientAuthType, pool *x509.CertPool) *tls.Config {
	if mode == tls.NoClientCert {
		return base
	}
	tc := &tls.Config{}
	if base != nil {
		tc = base.Clone()
		acmeOnly := base.Clone()
		tc.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			if slices.Contains(h.SupportedProtos, acme.ALPNProto) {
				return acmeOnly, nil
			}
			return nil, nil // tc
		}
	}
	tc.ClientAuth, tc.ClientCAs = mode, pool
	return tc
}
